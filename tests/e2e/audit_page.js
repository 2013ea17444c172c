// What a reader sees on one page, read from what chromium drew (tests/e2e/audit.py judges
// it). One call returns plain data: the checks are Python, so that a fault names the page,
// the element and the text without a second trip to the browser.
//
// arg: {root: selector of the page's content, charts: selector of each chart's svg}
(arg) => {
  const root = document.querySelector(arg.root) || document.body;
  const ctx = document.createElement('canvas').getContext('2d');
  const box = r => ({left: r.left, top: r.top, right: r.right, bottom: r.bottom,
                     width: r.width, height: r.height});
  const shown = el => {
    if (!el.isConnected) return false;
    for (let e = el; e && e !== document.documentElement; e = e.parentElement) {
      const o = e.getAttribute && e.getAttribute('opacity');
      if (o !== null && o !== undefined && parseFloat(o) === 0) return false;
      const cs = getComputedStyle(e);
      if (cs.display === 'none' || cs.visibility === 'hidden') return false;
    }
    const r = el.getBoundingClientRect();
    return r.width > 0 || r.height > 0;
  };
  const inGrid = el => !!el.closest("[data-testid='stDataFrame']");

  // Text a reader sees, line by line (a line is the unit a fault quotes).
  const lines = (root.innerText || '').split('\n').map(s => s.trim()).filter(Boolean);

  // Text cut by its box: an element that clips, scrolls or ellipsises and holds more than
  // it shows. The data grid draws on a canvas and is read below.
  const cut = [];
  // A text box (a select's value is one) that holds more than it shows.
  for (const el of root.querySelectorAll('input')) {
    if (el.type !== 'hidden' && el.value && el.scrollWidth > el.clientWidth + 1 && shown(el))
      cut.push({tag: 'input', text: el.value, shows: el.clientWidth, needs: el.scrollWidth});
  }
  for (const el of root.querySelectorAll('*')) {
    if (inGrid(el) || el.closest('svg') || !el.textContent.trim()) continue;
    const cs = getComputedStyle(el);
    const clips = cs.overflowX !== 'visible' || cs.textOverflow === 'ellipsis';
    if (!clips || el.scrollWidth <= el.clientWidth + 1 || !shown(el)) continue;
    // An element whose overflow is its children's job (a block that holds a cut one) is
    // named by its innermost clipping element only.
    const inner = [...el.querySelectorAll('*')].some(c => {
      const s = getComputedStyle(c);
      return (s.overflowX !== 'visible' || s.textOverflow === 'ellipsis') &&
             c.scrollWidth > c.clientWidth + 1 && c.textContent.trim();
    });
    if (!inner) cut.push({tag: el.tagName.toLowerCase(), text: el.textContent.trim(),
                          shows: el.clientWidth, needs: el.scrollWidth});
  }

  // A word broken across lines: one run of letters whose range spans two line boxes
  // (hyphens and slashes are break points a reader expects; code breaks on purpose).
  const broken = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const p = n.parentElement;
    if (!p || p.closest('pre, code, svg, script, style') || inGrid(p)) continue;
    if (!/[A-Za-z0-9]{4,}/.test(n.data) || !shown(p)) continue;
    for (const m of n.data.matchAll(/[A-Za-z0-9]{4,}/g)) {
      const r = document.createRange();
      r.setStart(n, m.index);
      r.setEnd(n, m.index + m[0].length);
      const tops = new Set([...r.getClientRects()].filter(b => b.width > 0)
        .map(b => Math.round(b.top)));
      if (tops.size > 1) broken.push({word: m[0], tag: p.tagName.toLowerCase(),
                                      text: p.textContent.trim().slice(0, 80)});
    }
  }

  // The data grids: glide draws cells on a canvas; its React props hold every column's
  // width and every cell's text, measured here in the grid's own font.
  const grids = [...root.querySelectorAll("[data-testid='stDataFrame']")]
    .filter(shown).map(el => {
      const canvas = el.querySelector('canvas');
      if (!canvas) return {columns: [], rows: 0, error: 'no canvas: ' + el.innerText.slice(0, 60)};
      const key = Object.keys(canvas).find(k => k.startsWith('__reactFiber$'));
      let f = key && canvas[key], p = null;
      for (let i = 0; f && i < 40 && !p; i++, f = f.return) {
        const q = f.memoizedProps;
        if (q && q.columns && q.getCellContent && q.theme) p = q;
      }
      if (!p) return {columns: [], rows: 0, error: 'grid props not found'};
      // What the grid draws in a missing cell: the element's placeholder (st.dataframe's
      // placeholder=, e.g. a dash) when it has one, else streamlit's grey 'None'.
      let placeholder = null;
      for (let i = 0; f && i < 40 && placeholder === null; i++, f = f.return) {
        const q = f.memoizedProps;
        if (q && q.element && typeof q.element === 'object' && 'arrowData' in q.element)
          placeholder = q.element.placeholder ?? 'None';
      }
      if (placeholder === null) placeholder = 'None';
      const t = p.theme, pad = t.cellHorizontalPadding;
      const rowH = typeof p.rowHeight === 'number' ? p.rowHeight : 35;
      let right = 0;  // each column's right edge from the grid's left, the marker included
      const columns = p.columns.map((c, ci) => {
        right += c.width;
        if (c.rowMarker !== undefined) return null;
        ctx.font = `${t.headerFontStyle} ${t.fontFamily}`;
        const head = ctx.measureText(c.title || '').width + pad + 2;
        ctx.font = `${t.baseFontStyle} ${t.fontFamily}`;
        let widest = '', need = 0;
        const cells = [];
        for (let r = 0; r < Math.min(p.rows, 400); r++) {
          const cell = p.getCellContent([ci, r]);
          let text = cell.displayData;
          if (typeof text !== 'string') text = typeof cell.data === 'string' ? cell.data : '';
          if (cell.kind === 'boolean' || cell.kind === 'bubble') text = '';
          if (cell.isMissingValue && !text) text = placeholder;
          cells.push(text);
          // glide draws a cell's text from its left padding and clips it at the column's
          // border, which overdraws the last pixels: the text must end 2 px before it
          const w = ctx.measureText(text).width + pad + 2;
          if (w > need) { need = w; widest = text; }
        }
        return {title: c.title || '', width: c.width, right, head, need, widest, cells};
      }).filter(Boolean);
      const r = el.getBoundingClientRect();
      return {columns, rows: p.rows, box_width: r.width, box_height: r.height,
              content_height: (p.headerHeight || 36) + p.rows * rowH};
    });

  // The charts Vega drew: each plot (a mark group with axes among its own marks), its
  // area (its background), its axes, and every mark item with its box.
  const charts = [...document.querySelectorAll(arg.charts)].filter(shown).map(svg => {
    const sb = svg.getBoundingClientRect();
    const texts = [...svg.querySelectorAll('text')].filter(t => t.textContent.trim() &&
      shown(t));
    const plots = [...svg.querySelectorAll('g.mark-group')].filter(g =>
        g.querySelector(':scope > g > g > g.role-axis, :scope > g > g.role-axis') &&
        g.querySelector(':scope > g > path.background')).map(g => {
      const bg = g.querySelector(':scope > g > path.background').getBoundingClientRect();
      const axes = [...g.querySelectorAll(':scope > g > g > g.role-axis')].map(a => ({
        aria: a.getAttribute('aria-label') || '',
        title: [...a.querySelectorAll('.role-axis-title text')].map(
          x => x.textContent).join(' '),
        labels: [...a.querySelectorAll('.role-axis-label text')].filter(shown).map(
          x => x.textContent)}));
      const items = [];
      for (const m of g.querySelectorAll(':scope > g > g > g.role-mark')) {
        const kind = [...m.classList].find(c => c.startsWith('mark-')) || 'mark';
        for (const it of m.children) {
          if (!shown(it)) continue;
          const r = it.getBoundingClientRect();
          if (r.width === 0 && r.height === 0) continue;
          items.push({kind, text: it.tagName === 'text' ? it.textContent : '',
                      label: (it.getAttribute('aria-label') || '').slice(0, 120),
                      clipped: !!it.closest('[clip-path]'), box: box(r)});
        }
      }
      return {box: box(bg), axes, items};
    });
    return {
      svg: box(sb),
      title: [...svg.querySelectorAll('.role-title-text text')].map(
        x => x.textContent).join(' '),
      subtitle: [...svg.querySelectorAll('.role-title-subtitle text')].map(
        x => x.textContent).join(' '),
      texts: texts.map(x => ({text: x.textContent, box: box(x.getBoundingClientRect())})),
      marks: [...svg.querySelectorAll('.role-mark > *')].map(
        x => x.getAttribute('aria-label') || '').filter(Boolean),
      plots};
  });

  // Widgets as a reader finds them: label and what they show (the share-link check
  // compares two visits by it).
  const widgets = [...root.querySelectorAll(
      "[data-testid='stSelectbox'], [data-testid='stMultiSelect'], " +
      "[data-testid='stCheckbox'], [data-testid='stToggle'], [data-testid='stRadio'], " +
      "[data-testid='stSlider'], [data-testid='stNumberInput'], [data-testid='stTextInput']")]
    .filter(shown).map(w => {
      const input = w.querySelector('input');
      const checked = w.querySelector('input[type=checkbox]');
      return (w.innerText || '').replace(/\s+/g, ' ').trim() +
        (checked ? ` [${checked.checked ? 'on' : 'off'}]` :
         input && input.value ? ` =${input.value}` : '');
    });
  const tabs = [...root.querySelectorAll("[role='tab'][aria-selected='true']")].map(
    x => x.textContent.trim());
  const codes = [...root.querySelectorAll("[data-testid='stCode'], pre")].map(
    x => x.textContent.trim());
  const links = [...root.querySelectorAll('a[href]')].map(a => a.getAttribute('href'));
  return {lines, cut, broken, grids, charts, widgets, tabs, codes, links};
}
