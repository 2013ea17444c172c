"""Capture-size advisor, torch-free: the distribution readers on real-looking text
(tests/data/capture/), the engines' default lists and rules, the advisor against brute
force, and the default curve against the shipped files it was taken from."""

import json
import random

import pytest

from contract import capture_advisor as ca
from contract import capture_dist as cd
from contract import capture_sizes as cs
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data" / "capture"


# --- readers ---------------------------------------------------------------------------------

def test_vllm_metrics_tables_are_summed_and_graphless_rows_kept():
    d = cd.read_file(str(DATA / "vllm_cudagraph_metrics.log"))
    assert d.fmt == "vllm-metrics" and d.unit == "tokens"
    assert d.counts[36] == 233 + 380  # the same size in two logging intervals
    assert d.counts[131] == 9  # Runtime Mode NONE: above the largest captured size
    assert d.total == 412 + 233 + 96 + 51 + 40 + 22 + 9 + 380 + 201 + 77 + 30
    assert "2 table(s)" in d.notes[0]


def test_vllm_prometheus_spreads_each_bucket_and_says_it_is_coarse():
    d = cd.read_file(str(DATA / "vllm_metrics.prom"))
    assert d.fmt == "vllm-prometheus"
    assert d.counts[1] == 51
    assert sum(d.counts[b] for b in range(2, 9)) == pytest.approx(121 - 51)
    assert d.counts[40] == pytest.approx((1542 - 294) / 32)
    assert not any(128 >= b > 64 for b in d.counts)  # an empty bucket stays empty
    assert d.total == pytest.approx(1551)
    assert any("coarse" in n for n in d.notes)
    assert any("9 steps were above" in n for n in d.notes)


def test_prometheus_not_cumulative_is_refused():
    text = ('vllm:iteration_tokens_total_bucket{le="8.0"} 10\n'
            'vllm:iteration_tokens_total_bucket{le="16.0"} 4\n')
    with pytest.raises(cd.DistError, match="not cumulative"):
        cd.parse_text(text)


def test_sglang_decode_lines_only():
    d = cd.read_file(str(DATA / "sglang_decode.log"))
    assert d.fmt == "sglang-log" and d.unit == "requests"
    assert d.counts == {1: 1, 3: 1, 9: 1, 19: 1, 27: 1, 31: 1, 32: 2, 57: 1, 61: 1, 64: 2}
    assert any("decode-log-interval" in n for n in d.notes)


def test_plain_sizes_and_csv_counts():
    d = cd.read_file(str(DATA / "batch_sizes.txt"))
    assert d.fmt == "plain" and d.counts[24] == 3 and d.total == 19
    c = cd.read_file(str(DATA / "batch_counts.csv"))
    assert c.counts[1] == 120 and c.counts[89] == 4 and c.total == 544


@pytest.mark.parametrize("text,needle", [
    ("", "empty"),
    ("   \n# only a comment\n", "empty"),
    ("hello world\nno numbers here\n", "no recognisable line"),
    ("4\n-3\n", "line 2: batch size -3 is below 1"),
    ("4\n2.5\n", "line 2: '2.5' is not a whole batch size"),
    ("4\n0\n", "line 2: batch size 0 is below 1"),
    ("size,count\n4,10\n8,-1\n", "line 3: count -1 is negative"),
    ("4,10,3\n", "line 1: expected size,count"),
])
def test_bad_plain_input_names_the_line(text, needle):
    with pytest.raises(cd.DistError, match=needle.replace(".", r"\.").replace("(", r"\(")):
        cd.parse_text(text)


def test_forced_format_with_no_line_says_so():
    with pytest.raises(cd.DistError, match="no SGLang 'Decode batch"):
        cd.parse_text("INFO nothing\n", "sglang-log")
    with pytest.raises(cd.DistError, match="no vLLM --cudagraph-metrics table"):
        cd.parse_text("1\n2\n", "vllm-metrics")
    with pytest.raises(cd.DistError, match=r"#running-req\): '-4' is not|below 1"):
        cd.parse_text("Decode batch. #running-req: -4, #token: 1\n")


def test_missing_file():
    with pytest.raises(cd.DistError, match="does not exist"):
        cd.read_file("/nonexistent/sizes.txt")


def test_quantile():
    d = cd.parse_text("1,50\n2,40\n100,10\n")
    assert d.quantile(0.5) == 1 and d.quantile(0.9) == 2 and d.quantile(1.0) == 100


# --- engine rules ------------------------------------------------------------------------------

def test_vllm_default_list_reproduced():
    r = cs.EngineRules("vllm")  # max_num_seqs 256: min(256 x 2, 512) = 512
    want = [1, 2, 4] + list(range(8, 256, 8)) + list(range(256, 513, 16))
    assert list(r.default_sizes()) == want
    small = cs.EngineRules("vllm", max_num_seqs=8)  # min(16, 512) = 16
    assert small.default_sizes() == (1, 2, 4, 8, 16)
    odd = cs.EngineRules("vllm", max_num_seqs=50)  # 100: the list stops at 96
    assert odd.default_sizes()[-1] == 96
    capped = cs.EngineRules("vllm", max_num_batched_tokens=128)
    assert capped.default_sizes()[-1] == 128


def test_vllm_speculative_rounding_and_sequence_parallel():
    r = cs.EngineRules("vllm", spec_tokens=2, max_num_seqs=64)  # max min(64*3*2,512)=384
    sizes = r.default_sizes()
    assert all(s % 3 == 0 for s in sizes) and sizes[:4] == (3, 6, 9, 18)
    assert sizes[-1] == 384 and list(sizes) == sorted(set(sizes))
    sp = cs.EngineRules("vllm", tp=4, sequence_parallel=True)
    assert all(s % 4 == 0 for s in sp.default_sizes()) and sp.default_sizes()[0] == 4
    both = cs.EngineRules("vllm", spec_tokens=1, tp=4, sequence_parallel=True)
    assert both.multiple_of == 4
    with pytest.raises(cs.AdviceError, match="multiple of both 3"):
        _ = cs.EngineRules("vllm", spec_tokens=2, tp=4, sequence_parallel=True).multiple_of


def test_sglang_default_lists_by_memory_tier():
    h200 = cs.EngineRules("sglang", gpu_mem_gib=141)
    assert h200.default_max() == 256
    want = [1, 2, 4, 8, 12] + list(range(16, 257, 8))
    assert list(h200.default_sizes()) == want
    big = cs.EngineRules("sglang", gpu_mem_gib=180)
    assert big.default_sizes()[-3:] == (480, 496, 512)
    assert cs.EngineRules("sglang", gpu_mem_gib=16).default_sizes() == (1, 2, 4, 8)
    assert cs.EngineRules("sglang", gpu_mem_gib=24, tp=4).default_max() == 80
    assert cs.EngineRules("sglang").default_max() == 160  # memory unknown
    spec = cs.EngineRules("sglang", gpu_mem_gib=80, spec_tokens=3)
    assert spec.default_sizes()[:10] == (1, 2, 3, 4, 5, 6, 7, 8, 10, 12)
    assert spec.default_sizes()[-1] == 256


def test_config_lines_obey_each_engine():
    v = cs.config_lines("vllm", [16, 1, 8])
    assert v == ['--compilation-config \'{"cudagraph_capture_sizes": [1, 8, 16], '
                 '"max_cudagraph_capture_size": 16}\'']
    cfg = json.loads(v[0].split("'")[1])
    assert cfg["max_cudagraph_capture_size"] == max(cfg["cudagraph_capture_sizes"])
    assert cs.config_lines("sglang", [4, 1]) == ["--cuda-graph-bs 1 4"]
    assert cs.config_lines("torch", [2, 1])[-1] == \
        "inductor_config.triton.cudagraph_capture_sizes = (1, 2)"


# --- curve and pricing -------------------------------------------------------------------

def test_default_curve_matches_the_files_it_was_taken_from():
    sample = json.loads((ROOT / "data/samples/h200-mlp.json").read_text())
    pts = [(m["batch_size"], m["graph_pool_bytes"]) for m in sample["measurements"]
           if m["mode"] == "cuda-graph"]
    n = len(pts)
    mx = sum(b for b, _ in pts) / n
    my = sum(p for _, p in pts) / n
    slope = sum((b - mx) * (p - my) for b, p in pts) / sum((b - mx) ** 2 for b, _ in pts)
    assert cs.DEFAULT_CURVE.per_row_bytes == pytest.approx(slope, rel=0.01)
    assert cs.DEFAULT_CURVE.fixed_bytes == pytest.approx(my - slope * mx, rel=0.01)
    probe = json.loads((ROOT / "bench/results/h200-capture-memory-mlp.json").read_text())
    rows = probe["variants"]["shared-clear"]["rows"]
    grow = (rows[-1]["device_used_bytes"] - rows[0]["device_used_bytes"]) / (len(rows) - 1)
    assert cs.DEFAULT_CURVE.per_graph_bytes == pytest.approx(grow, rel=0.01)
    assert rows[0]["pool_bytes"] == rows[-1]["pool_bytes"]  # the shared pool did not grow


def test_price_counts_padding_and_graphless():
    curve = cs.Curve(10 * cs.MIB, 0.0, cs.MIB, 1.0, 0.1, "test")
    p = cs.price({3: 1, 8: 1, 20: 1}, [4, 8], curve)
    assert p.padding_waste == pytest.approx((4 + 8) / (3 + 8) - 1)
    assert p.graphless_share == pytest.approx(1 / 3)
    assert p.pool_bytes == 11 * cs.MIB and p.capture_s == pytest.approx(1.1)
    assert curve.pool_bytes([4, 8], shared=False) == 20 * cs.MIB


# --- the advisor -------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(25))
def test_least_padding_matches_brute_force(seed):
    rng = random.Random(seed)
    counts = {rng.randint(1, 40): rng.randint(1, 9) for _ in range(rng.randint(2, 9))}
    cands = sorted(set(counts) | {max(counts) + rng.randint(0, 3)})
    got = ca.least_padding(counts, cands, len(cands))
    for k, (rows, sizes) in got.items():
        want_rows, _ = ca.brute_force(counts, cands, k)
        assert rows == pytest.approx(want_rows), (k, sizes)
        assert len(sizes) == k and sizes[-1] == cands[-1]


def test_advisor_within_budget_beats_or_ties_every_list_of_its_size():
    d = cd.read_file(str(DATA / "batch_counts.csv"))
    curve = cs.Curve(32 * cs.MIB, 1000.0, 2 * cs.MIB, 0.2, 0.01, "test")
    a = ca.advise(d, cs.EngineRules("sglang", gpu_mem_gib=80), curve, 40 * cs.MIB)
    assert a.proposed.pool_bytes <= 40 * cs.MIB
    assert a.proposed.sizes[-1] == 89 and a.proposed.graphless_share == 0
    k = len(a.proposed.sizes)
    best, _ = ca.brute_force(d.counts, sorted(set(d.counts)), k)
    real = sum(x * c for x, c in d.counts.items())
    assert a.proposed.padding_waste <= best / real + ca.TOLERANCE + 1e-9
    assert a.config == (f"--cuda-graph-bs {' '.join(map(str, a.proposed.sizes))}",)
    # The default is compared within the range the log covers (issue 37): SGLang's list
    # goes to 256 here, the largest batch seen is 89, so up to its first size >= 89.
    full = cs.EngineRules("sglang", gpu_mem_gib=80).default_sizes()
    assert full[-1] == 256
    assert a.default.sizes == tuple(x for x in full if x < 89) + (96,)
    assert "within the distribution's range" in a.default_label and "256" in a.default_label


def test_a_default_list_inside_the_logs_range_is_compared_whole():
    d = cd.parse_text("1,10\n600,3\n")
    a = ca.advise(d, cs.EngineRules("vllm"), cs.DEFAULT_CURVE, 1000 * cs.MIB)
    assert a.default.sizes == cs.EngineRules("vllm").default_sizes()
    assert "within" not in a.default_label


def test_advisor_vllm_speculative_sizes_are_multiples():
    d = cd.parse_text("3,10\n6,20\n9,5\n30,7\n")
    a = ca.advise(d, cs.EngineRules("vllm", spec_tokens=2), cs.DEFAULT_CURVE, 100 * cs.MIB)
    assert all(s % 3 == 0 for s in a.proposed.sizes)
    assert a.proposed.padding_waste == 0 and a.proposed.sizes[-1] == 30


def test_budget_below_one_graph_and_tight_budget():
    d = cd.parse_text("1\n2\n500\n")
    with pytest.raises(cs.AdviceError, match="below one graph"):
        ca.advise(d, cs.EngineRules("vllm"), cs.DEFAULT_CURVE, 10 * cs.MIB)
    curve = cs.Curve(10 * cs.MIB, 64 * 1024, 0, 0.1, 0.01, "test")  # 500 rows = 31 MiB
    a = ca.advise(d, cs.EngineRules("torch"), curve, 30 * cs.MIB)
    assert a.proposed.sizes[-1] < 500 and a.proposed.graphless_share == pytest.approx(1 / 3)
    assert any("run without graphs" in n for n in a.notes)


def test_torch_default_is_every_size_seen():
    d = cd.parse_text("1\n3\n3\n9\n")
    a = ca.advise(d, cs.EngineRules("torch"), cs.DEFAULT_CURVE, 100 * cs.MIB)
    assert a.default.sizes == (1, 3, 9) and a.default.padding_waste == 0


@pytest.mark.parametrize("seed", range(8))
def test_least_padding_matches_brute_force_on_wider_spreads(seed):
    rng = random.Random(100 + seed)
    counts = {rng.randint(1, 300): rng.random() * 50 for _ in range(14)}
    cands = sorted(counts)
    got = ca.least_padding(counts, cands, 6)
    for k in range(1, 7):
        assert got[k][0] == pytest.approx(ca.brute_force(counts, cands, k)[0])


def test_advisor_prices_every_graph_count_on_a_wide_distribution():
    # How long it takes is bench/advisor_speed.py's to say, not a test's.
    rng = random.Random(7)
    d = cd.parse_text("\n".join(f"{rng.randint(1, 512)},{rng.randint(1, 99)}"
                                for _ in range(2000)))
    curve = cs.Curve(32 * cs.MIB, 0.0, 64 * 1024, 0.1, 0.01, "test")
    a = ca.advise(d, cs.EngineRules("sglang"), curve, 64 * cs.MIB, tolerance=0.0)
    assert len(a.by_graphs) > 100


@pytest.mark.parametrize("seed", range(12))
def test_every_proposal_is_a_list_its_engine_accepts_unchanged(seed):
    rng = random.Random(300 + seed)
    rules = rng.choice([cs.EngineRules("vllm"), cs.EngineRules("vllm", spec_tokens=3),
                        cs.EngineRules("vllm", tp=2, sequence_parallel=True),
                        cs.EngineRules("vllm", spec_tokens=1, tp=4, sequence_parallel=True),
                        cs.EngineRules("vllm", max_num_batched_tokens=96),
                        cs.EngineRules("sglang", gpu_mem_gib=80), cs.EngineRules("torch")])
    counts = {rng.randint(1, 300): rng.randint(1, 50) for _ in range(rng.randint(1, 40))}
    a = ca.advise(cd.BatchCounts(counts, "plain", "batch"), rules, cs.DEFAULT_CURVE,
                  rng.choice([40, 64, 512]) * cs.MIB, cover=rng.choice([1.0, 0.9]))
    sizes = a.proposed.sizes
    assert list(sizes) == sorted(set(sizes)) and all(rules.valid(s) for s in sizes)
    assert rules.conform(sizes) == sizes  # what the engine would capture is what we said
    assert a.proposed.pool_bytes <= a.budget_bytes
    if rules.max_num_batched_tokens:
        assert sizes[-1] <= rules.max_num_batched_tokens


def test_vllm_conform_matches_its_source_on_a_given_list():
    # compilation.py adjust_cudagraph_sizes_for_spec_decode: round up, drop above the max
    r = cs.EngineRules("vllm", spec_tokens=2)
    assert r.conform([1, 2, 4, 8, 10]) == (3, 6, 9)  # 10 -> 12 is above the max (10)
    assert cs.EngineRules("vllm", spec_tokens=4).conform([1, 2]) == ()  # 5 > 2: none
    sp = cs.EngineRules("vllm", tp=4, sequence_parallel=True)
    assert sp.conform([1, 2, 4, 6, 8, 12]) == (4, 8, 12)
