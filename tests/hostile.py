"""Bundles whose text is an attack (issues 29 and 48): every place a bundle puts text
(the environment, the run's header and parameters, a point's message, a published
point's notes, the trace's kernel names) holds Markdown or HTML that would make a
reader's browser fetch a URL or show a link, if any page rendered it as markup.

`host` is where the payloads point: a local counting server in the browser tests, so a
request that leaks is seen (and nothing reaches the network)."""

from __future__ import annotations

from tests.synthetic import sweep_bundle


def payloads(host: str) -> dict[str, str]:
    """Each attack the issues name, by name. `host` is http://HOST:PORT."""
    bare = host.split("://", 1)[1]
    return {
        "image": f"![p]({host}/img-label.png)",                 # the Perfetto button's
        "protocol-relative": f"![p](//{bare}/proto.png)",
        "heading": f"# ![p]({host}/heading.png)",
        "link": f"[Re-login here]({host}/phish)",
        "bare": f"{host}/bare and www.example.invalid",
        "tag": f'<img src="{host}/tag.png">',
        "reference": f"![p][r]\n\n[r]: {host}/reference.png",
        "autolink": f"<{host}/autolink.png>",
    }


def hostile_bundle(host: str, uuid: str = "hostile-1", gpu_tail: str = "",
                   **kw) -> dict:
    """A sweep with traces (so the timeline's Perfetto downloads are drawn) whose text
    fields each carry an attack."""
    p = payloads(host)
    doc = sweep_bundle(uuid=uuid, label=f"{p['link']} {p['image']}", traces=True,
                       batches=(1, 8, 64),
                       failing={("compile", 64): f"{p['heading']} {p['tag']}"},
                       params={"depth": 2, "width": 16, "note": p["reference"],
                               p["image"]: p["autolink"]}, **kw)
    doc["environment"].update(gpu_name=f"{p['image']}{gpu_tail}",
                              torch_version=p["protocol-relative"][:100],
                              hostname=p["bare"], cpu_model=p["heading"],
                              driver_version=p["tag"][:100], cuda_version=p["link"][:100])
    doc["run"]["workload"] = f"mlp {p['link']}"
    doc["run"]["command"] = f"python -m runner sweep {p['image']}"
    for m in doc["measurements"]:
        if m["status"] == "ok":
            m["details"].update(note=p["image"], citation=p["link"], url=f"{host}/url")
            if m.get("trace"):
                m["trace"]["names"] = [f"{n} {p['image']}"[:200] if "gemm" in n else n
                                       for n in m["trace"]["names"]]
    return doc


def published_hostile(host: str, uuid: str = "hostile-published") -> dict:
    """The same attacks in a published run, whose label and notes pages quote."""
    p = payloads(host)
    doc = hostile_bundle(host, uuid=uuid, gpu_tail=" (published)")
    doc["run"].update(source="published", label=f"{p['image']} {p['protocol-relative']}")
    return doc


def _retold(sample: str, host: str, uuid: str) -> dict:
    """A shipped sample's serve or graph-memory run with its text replaced by the
    attacks (its figures as they are: a real run's)."""
    import json

    from tests.conftest import ROOT

    p = payloads(host)
    doc = json.loads((ROOT / "data" / "samples" / sample).read_text(encoding="utf-8"))
    doc["environment"].update(gpu_name=p["image"], hostname=p["bare"], cpu_model=p["tag"])
    doc["run"].update(uuid=uuid, label=f"{p['link']} {p['heading']}",
                      workload=f"mlp {p['protocol-relative']}",
                      command=f"python -m runner serve {p['image']}")
    return doc


def hostile_serve(host: str) -> dict:
    return _retold("h200-serve-mlp.json", host, "hostile-serve")


def hostile_graph_memory(host: str) -> dict:
    return _retold("h200-graph-memory-mlp.json", host, "hostile-graph-memory")
