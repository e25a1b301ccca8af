"""The HTML/Markdown report: every section and plot present, numbers equal `costopt solve`, renders in Chromium."""

import base64
import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser

import numpy as np
import pytest

import costopt
from costopt.purchase import report as R
from costopt.purchase.purchasing import Options

# `python -m costopt.cli` would not load the sub-command modules (they import costopt.cli, a second copy)
CLI = [sys.executable, "-c", "from costopt.cli import main; main()"]
BUDGET, MODEL = 200_000, "resnet50"
JOB = dict(epochs=90, dataset_size=1_281_167)


class _Collect(HTMLParser):
    """Element ids, image sources, the text, and the text of each <script id=...> (test_llm_report too)."""

    def __init__(self):
        super().__init__()
        self.ids, self.imgs, self.text, self.scripts, self._in = set(), [], [], {}, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "img":
            self.imgs.append(a.get("src", ""))
        if tag == "script":
            self._in = a.get("id")

    def handle_data(self, data):
        self.text.append(data)
        if self._in:
            self.scripts[self._in] = self.scripts.get(self._in, "") + data

    def handle_endtag(self, tag):
        if tag == "script":
            self._in = None


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    rep = R.build_report(MODEL, BUDGET, None, Options(**JOB), progress=False)
    d = tmp_path_factory.mktemp("report")
    html_path = d / "report.html"
    R.write_report(rep, html_path)
    return rep, html_path


@pytest.fixture(scope="module")
def solved():
    p = subprocess.run(CLI + [ "solve", "--budget", str(BUDGET), "--model", MODEL,
                        "--epochs", "90", "--dataset-size", "1281167", "--top", "8", "--format", "json"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_every_section_and_plot_present(built):
    rep, path = built
    doc = _Collect()
    doc.feed(path.read_text())
    for sid in R.SECTIONS + ("time",):  # epochs given: time to train is there
        assert sid in doc.ids, sid
    assert "rentbuy" not in doc.ids  # no cloud catalog given
    for fig in ("gputypes", "pareto", "scaling", "bandwidth", "budget", "time", "breakdown"):
        assert f"fig-{fig}" in doc.ids, fig
    assert len(doc.imgs) == 7
    for src in doc.imgs:  # self-contained: every plot is an embedded PNG
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    # no image is fetched from a URL (only the part before the base64 payload can name one: the payload itself may
    # contain the letters "http" by chance, which made this check fail on unrelated changes to the plotted numbers)
    assert not any("://" in src.split(",", 1)[0] for src in doc.imgs)


def test_numbers_equal_solve(built, solved):
    rep, path = built
    text = path.read_text()
    m = re.search(r'<script type="application/json" id="costopt-solve">(.*?)</script>', text, re.S)
    embedded = json.loads(m.group(1))
    assert embedded["best"] == solved["best"] and embedded["alternatives"] == solved["alternatives"]
    b = solved["best"]
    visible = "".join(_text(text))
    assert f"{b['throughput_samples_per_s']:,.1f}" in visible
    assert f"${b['cost_usd']:,.0f}" in visible
    assert f"{b['t_iter_s'] * 1e3:,.1f}" in visible
    rows = rep.section("recommended").tables[0][1]
    assert [r[6] for r in rows] == [f"{d['throughput_samples_per_s']:,.1f}" for d in [b] + solved["alternatives"]]
    tt = rep.section("time").tables[0][1]
    assert tt[0][3] == f"{b['time_to_train_h']:,.2f}"


def _text(html_text):
    c = _Collect()
    c.feed(html_text)
    return c.text


def test_breakdown_sums_to_iteration(built, solved):
    rep, _ = built
    rows = rep.section("breakdown").tables[0][1]
    parts = [float(r[1].replace(",", "")) for r in rows if r[0] not in ("iteration (t_iter)",) and not r[0].startswith("all comm")]
    assert sum(parts) == pytest.approx(solved["best"]["t_iter_s"] * 1e3, rel=1e-3)


def test_bandwidth_requirement_is_where_efficiency_crosses_90():
    res = costopt.solve(BUDGET, MODEL)
    from costopt.purchase.purchasing import evaluate_catalog

    ev = evaluate_catalog(None, MODEL, BUDGET, Options())
    multi = [d for d in [res.best] + res.alternatives if d["nodes"] > 1][:2]
    req = R.bandwidth_requirement(ev, multi)
    for r in req:
        need = r["required_gbps"]
        d = r["design"]
        assert np.all(np.diff(r["efficiency"]) >= -1e-9)  # more bandwidth never hurts
        if need is None:
            # documented: None when no line rate of the grid reaches 90%; then the curve stays below 0.9 and,
            # when the limit at the top rate is inside the node (e.g. PCIe), the verdict does not call the NIC short
            assert r["efficiency"].max() < 0.9
            verdict, short = R.network_verdict(ev, r)
            assert short == (r["bound_at_top_rate"] == "network"), verdict
            continue
        lo = costopt.predict(MODEL, d["gpu"], d["gpus_per_node"], d["nodes"], d["nic"], d["strategy"])
        # the design at its own NIC: efficiency above 0.9 exactly when its rate is above the requirement
        rate = {"10gbe": 10, "25gbe": 25, "40gbe": 40}.get(d["nic"])
        if rate is not None:
            assert (lo["scaling_efficiency"] >= 0.9) == (rate >= need * 0.97) or abs(rate - need) / need < 0.05
        assert np.all(np.diff(r["efficiency"]) >= -1e-9)  # more bandwidth never hurts


def test_markdown_report(built, tmp_path):
    rep, _ = built
    files = R.write_report(rep, tmp_path / "r.md")
    md = files[0].read_text()
    for sec in rep.sections:
        assert f"## {sec.title}" in md
    assert len(files) == 8 and all(f.exists() for f in files)
    assert "(r_files/pareto.png)" in md


def test_report_cli_bad_out(tmp_path):
    p = subprocess.run(CLI + [ "report", "--model", MODEL, "--budget", "1000",
                        "--out", str(tmp_path / "r.pdf")], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "--out must end in .html or .md" in p.stderr


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def assert_renders_in_chromium(path, tmp_path):
    """Headless Chromium screenshots the page; it is not blank (also used by test_llm_report)."""
    shot = tmp_path / "shot.png"
    cmd = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
           "--window-size=1200,2400", f"--screenshot={shot}", path.resolve().as_uri()]
    subprocess.run(cmd, capture_output=True, timeout=90)
    assert shot.exists() and shot.stat().st_size > 0
    import matplotlib.image as mpimg

    img = mpimg.imread(shot)[..., :3]
    # not blank: many distinct colours and a good share of non-white pixels (text, tables, plots)
    non_white = (img < 0.95).any(axis=-1).mean()
    colours = len(np.unique((img[::4, ::4] * 255).astype(np.uint8).reshape(-1, 3), axis=0))
    assert non_white > 0.05, non_white
    assert colours > 50, colours


@pytest.mark.skipif(_chromium() is None, reason="chromium not installed")
def test_renders_in_headless_chromium(built, tmp_path):
    assert_renders_in_chromium(built[1], tmp_path)


# ---- what a buyer asks of the report -----------------------------------------------------------------


def test_best_per_gpu_type_table(built, solved):
    rep, _ = built
    header, rows = rep.section("gputypes").tables[0]
    per = solved["best_per_gpu"]
    assert len(rows) >= 5 and len({r[0] for r in rows}) == len(rows)  # at least 5 GPU types, one row each
    assert [r[0] for r in rows] == [d["gpu"] for d in per]
    for r, d in zip(rows, per):
        assert r[3] == f"{d['throughput_samples_per_s']:,.1f}"
        assert r[4] == f"{d['throughput_samples_per_s'] / solved['best']['throughput_samples_per_s']:.2f}"
    assert rows[0][0] == solved["best"]["gpu"]


def test_dollar_axis_labels():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    R._dollar_axis(ax.xaxis)
    fmt = ax.xaxis.get_major_formatter()
    assert fmt(200_000, 0) == "$200,000" and fmt(1.5e6, 0) == "$1,500,000" and fmt(25, 0) == "$25.00"
    plt.close(fig)


def test_scaling_curves_use_the_designs_adapters():
    from costopt.hardware.catalog import load_catalog
    from costopt.purchase.purchasing import evaluate_catalog

    best = costopt.solve(2_000_000, MODEL, gpus=["h100-sxm"]).best
    assert best["nics_per_node"] == 8  # an HGX node with one adapter per GPU
    cat = load_catalog(None)
    ev = evaluate_catalog(cat, MODEL, 2_000_000, Options())
    sec = R._scaling(cat, ev, best, Options())
    rows = sec.tables[0][1]
    assert rows and all(r[1].startswith("8x ") for r in rows if r[1].split()[-1] == best["nic"])
    ring = next(r for r in rows if r[0] == best["strategy"] and r[1] == f"8x {best['nic']}")
    gpus = int(ring[3])
    d = costopt.predict(MODEL, "h100-sxm", 8, gpus // 8, best["nic"], best["strategy"], nics_per_node=8,
                        chassis=best["chassis"])
    assert ring[4] == f"{d['throughput_samples_per_s']:,.1f}"


def test_bom_and_filter_summary_rendered_when_present(solved):
    """Another helper adds DESIGN `bom` and solve's `excluded`; the report shows them when they are there."""
    import dataclasses

    res = costopt.solve(BUDGET, MODEL, top=2)
    b = res.best
    bom = [{"item": "GPU", "part_id": b["gpu"], "unit_price_usd": 1000.0, "quantity": 3, "subtotal_usd": 3000.0,
            "source": "test"},
           {"item": "chassis", "part_id": b["chassis"], "unit_price_usd": 250.5, "quantity": 2, "subtotal_usd": 501.0,
            "source": "test"}]
    with_bom = dataclasses.replace(res, best={**b, "bom": bom})
    sec = R._recommended(with_bom, "USD capex", False)
    (header, rows), = [t for t in sec.tables if t[0][0].startswith("bill of materials")]
    assert rows[-1] == ["total", "", "", "", "$3,501.00", ""]  # 3 x 1000 + 2 x 250.50
    assert rows[1][2] == "$250.50" and rows[1][3] == "2"
    # solve now always carries the bill (bom.py): without it, no table
    plain = R._recommended(dataclasses.replace(res, best={k: v for k, v in b.items() if k != "bom"}), "USD capex", False)
    assert not [t for t in plain.tables if t[0][0].startswith("bill of materials")]


def test_rent_or_buy_section_and_no_time_without_epochs(tmp_path):
    from pathlib import Path

    aws = Path(__file__).resolve().parents[1] / "catalogs" / "aws-on-demand-2025.toml"
    rep = R.build_report("alexnet", 20_000, None, Options(), top=3, progress=False, cloud=aws, years=3,
                         utilization=0.5)
    ids = [s.id for s in rep.sections]
    assert "time" not in ids and "rentbuy" in ids
    rows = {r[0]: r for r in rep.section("rentbuy").tables[0][1]}
    capex = float(rows["buy: capex"][1].strip("$").replace(",", ""))
    assert capex <= 20_000 and capex == pytest.approx(rep.solve_json["best"]["capex_usd"], abs=0.5)
    assert "Verdict:" in rep.section("rentbuy").intro
    path = tmp_path / "r.html"
    R.write_report(rep, path)
    doc = _Collect()
    doc.feed(path.read_text())
    assert "rentbuy" in doc.ids and "time" not in doc.ids


# ---- the report decides (issue 25): first screen, assumptions, sensitivity, charts, tables that fit ------------

CNN = dict(model="inception_v3", budget=200_000)
LLM = dict(model="llama3_70b", budget=2_000_000, tokens=1e12)
LAYOUT_PROBE = """<script>
(function(){
  var out = {width: window.innerWidth, height: window.innerHeight, overflow: []};
  document.querySelectorAll('table').forEach(function(t, i){
    var r = t.getBoundingClientRect(), p = t.parentElement.getBoundingClientRect();
    if (r.right > p.right + 1 || r.right > window.innerWidth || t.scrollWidth > t.clientWidth + 1)
      out.overflow.push({table: i, section: t.closest('section') ? t.closest('section').id : '', right: r.right,
                         page: p.right});
  });
  var rec = document.querySelector('#summary .rec'), sub = document.querySelector('.sub');
  out.rec = rec ? {text: rec.textContent, top: rec.getBoundingClientRect().top,
                   bottom: rec.getBoundingClientRect().bottom} : null;
  out.sub = sub ? {text: sub.textContent, bottom: sub.getBoundingClientRect().bottom} : null;
  var pre = document.createElement('pre'); pre.id = 'layout-probe'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


@pytest.fixture(scope="module")
def decided(tmp_path_factory):
    """Both reports as a committee gets them: the CNN one with a job, the large-model one with tokens."""
    from costopt.purchase.llm_report import build_llm_report

    d = tmp_path_factory.mktemp("decided")
    cnn = R.build_report(CNN["model"], CNN["budget"], None, Options(**JOB), progress=False)
    llm = build_llm_report(LLM["model"], LLM["budget"], tokens=LLM["tokens"], progress=False)
    out = {}
    for name, rep in (("cnn", cnn), ("llm", llm)):
        R.write_report(rep, d / f"{name}.html")
        out[name] = (rep, d / f"{name}.html")
    return out


def _offered_gpus():
    """GPU ids the default part filter offers, read from the catalog's own fields (segment, lifecycle)."""
    from costopt.hardware.catalog import load_catalog

    cat = load_catalog(None)
    return ({g.id for g in cat.gpu if g.segment in ("datacenter", "workstation") and g.lifecycle == "current"},
            {g.id for g in cat.gpu})


@pytest.mark.parametrize("name", ["cnn", "llm"])
def test_first_screen_carries_the_decision(decided, name):
    """The summary comes first: what to buy (GPU count and type, nodes, NIC), its cost, what it achieves with its
    range, two alternatives of other GPU types (the next two of the solve's best-per-GPU list), risks, what to
    verify (rent a node, profile, quotes), version and the report's date."""
    rep, _ = decided[name]
    s = rep.sections[0]
    assert s.id == "summary" and s.css_class == "summary"
    js = rep.solve_json
    b = js["best"]
    unit = "samples/s" if name == "cnn" else "tokens/s"
    point = b["throughput_samples_per_s" if name == "cnn" else "tokens_per_s"]
    lo = b["throughput_low_samples_per_s" if name == "cnn" else "tokens_per_s_low"]
    assert s.intro.startswith(f"Buy {b['total_gpus']} x {b['gpu']} ({b['gpus_per_node']} per node x {b['nodes']} nodes")
    assert f"${b['cost_usd']:,.0f} capex" in s.intro and "TCO over 3 years" in s.intro
    assert f"{point:,.0f} {unit} (80% range {lo:,.0f}-" in s.intro
    header, rows = s.tables[0]
    others = [d["gpu"] for d in js["best_per_gpu"] if d["gpu"] != b["gpu"]][:2]
    assert [r[0] for r in rows] == [b["gpu"], *others] and len(set(r[0] for r in rows)) == 3
    lists = dict(s.lists)
    assert lists["Risks"] and all(len(x) > 20 for x in lists["Risks"])
    verify = " ".join(lists["Verify before signing"])
    assert "Rent one" in verify and "for a day" in verify and "quotes" in verify
    if name == "cnn":
        assert "costopt profile --model inception_v3" in verify
    assert f"costopt {costopt.__version__}" in rep.subtitle and f"prices as of {js['as_of']}" in rep.subtitle


@pytest.mark.parametrize("name", ["cnn", "llm"])
def test_charts_and_tables_show_only_offered_parts(decided, name):
    """No chart names a GPU that the default part filter leaves out (K80, RTX 4090, the legacy A100/H100 ...):
    its legend entries and tick labels are read back from the drawn matplotlib figure."""
    rep, _ = decided[name]
    offered, every = _offered_gpus()
    assert every - offered  # the catalog does hold parts the filter leaves out
    for sec in rep.sections:
        for f in sec.figures:
            named = {w for label in f.labels for w in label.replace(",", " ").split() if w in every}
            assert named <= offered, (sec.id, f.name, named - offered)
    pareto_rows = rep.section("pareto").tables[0][1]
    assert {r[0] for r in pareto_rows} <= offered


def test_gpu_styles_tell_every_series_apart():
    """Colour and marker together are unique for up to 20 GPU types (two tab20 colours are close; their markers
    differ)."""
    ids = [f"gpu{i}" for i in range(20)]
    colors, markers = R._gpu_colors(ids), R._gpu_markers(ids)
    assert len({(tuple(colors[g]), markers[g]) for g in ids}) == 20
    assert len({markers[g] for g in ids[:15]}) == 15


def test_short_nic_is_said_in_the_why_line_too(decided):
    """When the bandwidth section calls the recommended design's NIC short, the recommendation's paragraph (its
    Why line) and the summary's risks say so; when it is enough, neither does."""
    rep, _ = decided["cnn"]
    b = rep.solve_json["best"]
    label = f"{b['gpus_per_node']}x{b['nodes']} {b['gpu']}, {R._nics(b)}, {b['strategy']}"
    rows = [r for r in rep.section("bandwidth").tables[0][1] if r[0].endswith(label)]
    assert rows, label
    # "not reached" is short only when the limit at the top line rate is the network itself
    short = rows[0][-1].startswith("short") or (rows[0][-1].startswith("not reached") and "(network-bound)" in rows[0][-1])
    rec = rep.section("recommended").intro
    risks = " ".join(dict(rep.sections[0].lists)["Risks"])
    assert ("NIC is short" in rec) == short and ("NIC is short" in risks) == short
    if short:
        assert rows[0][-1] in rec


def test_sensitivity_rows_by_hand(decided):
    """TCO is the whole cost of owning that `costopt predict --tco-years 3` gives the same design (its cost_usd);
    electricity x2 adds three more years of electricity (3 x e); colocation x2 adds its term once more; at
    utilisation u the owned cost per 1e6 samples is (TCO / 3) / (throughput x 3,600 x 8,766 x u) x 1e6."""
    rep, _ = decided["cnn"]
    b = rep.solve_json["best"]
    rows = {r[0].split(" ($")[0]: r for r in rep.section("sensitivity").tables[0][1]}
    for key in ("every price -20%", "every price +20%", "throughput at the 80% range's low end",
                "throughput at the 80% range's high end", "utilisation 25%", "utilisation 100%", "electricity price x2",
                "colocation price x2"):
        assert key in rows, (key, list(rows))
    p = costopt.predict(CNN["model"], b["gpu"], b["gpus_per_node"], b["nodes"], b["nic"], b["strategy"],
                        chassis=b["chassis"], nics_per_node=b["nics_per_node"], batch_per_gpu=b["batch_per_gpu"],
                        precision=b["precision"], tco_years=3)
    tco3 = p["cost_usd"]
    assert tco3 > b["capex_usd"] + 3 * b["energy_usd_per_year"]  # more than capex + electricity: colocation, staff...
    assert f"TCO over 3 years ${tco3:,.0f}" in rep.sections[0].intro
    assert rows["electricity price x2"][2] == f"TCO 3 y ${tco3 + 3 * b['energy_usd_per_year']:,.0f}"
    colo = sum(x["subtotal_usd"] for x in p["tco"] if x["part_id"] == "colocation")
    assert rows["colocation price x2"][2] == f"TCO 3 y ${tco3 + colo:,.0f}"
    per_1e6 = tco3 / 3 / (b["throughput_samples_per_s"] * 3600 * 8766 * 0.25) * 1e6
    assert rows["utilisation 25%"][2].startswith(f"owned ${per_1e6:,.2f} per 1e6 samples")
    # a price cut of 20% is the budget / 0.8: the pick there costs more than this budget, yet at most 250,000
    cheaper = rows["every price -20%"]
    assert "samples/s" in cheaper[2]
    assumptions = {r[0]: r for r in rep.section("assumptions").tables[0][1]}
    assert assumptions["costopt version"][1] == costopt.__version__
    assert assumptions["report date (prices aged to)"][1] == rep.solve_json["as_of"]
    assert "reference-2026" in assumptions["catalogs"][1]


def test_wide_tables_are_split_with_their_keys():
    """A 14-column table with a '#' rank splits into parts of at most 9 columns, each repeating '#' and the GPU;
    12 other columns in two balanced parts of 6 (hand: ceil(12 / 7) = 2 parts, ceil(12 / 2) = 6 each)."""
    from costopt.purchase.report_parts import split_columns

    header = ["#", "GPU"] + [f"c{i}" for i in range(12)]
    rows = [[str(i), f"g{i}"] + [f"{i}.{j}" for j in range(12)] for i in range(3)]
    parts = split_columns(header, rows)
    assert [h for h, _ in parts] == [["#", "GPU"] + [f"c{i}" for i in range(6)],
                                     ["#", "GPU"] + [f"c{i}" for i in range(6, 12)]]
    assert parts[1][1][2] == ["2", "g2"] + [f"2.{j}" for j in range(6, 12)]
    assert split_columns(header[:9], [r[:9] for r in rows]) == [(header[:9], [r[:9] for r in rows])]


@pytest.mark.skipif(_chromium() is None, reason="chromium not installed")
@pytest.mark.parametrize("name", ["cnn", "llm"])
def test_reports_fit_a_1400_px_page_in_chromium(decided, name, tmp_path):
    """Headless Chromium at 1400 x 1000 px: no table runs past its section or the window, and the first screen
    (above 913 px, the viewport Chromium leaves) shows the recommendation, the version and the date. The
    screenshot is kept next to the page for a human to look at."""
    rep, path = decided[name]
    probe = tmp_path / f"{name}-probe.html"
    probe.write_text(path.read_text(encoding="utf-8").replace("</body>", LAYOUT_PROBE + "</body>"), encoding="utf-8")
    p = subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                        "--hide-scrollbars", "--window-size=1400,1000", "--virtual-time-budget=5000", "--dump-dom",
                        probe.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    m = re.search(r'<pre id="layout-probe">(.*?)</pre>', p.stdout, re.S)
    assert m, p.stderr[-2000:]
    import html as _html

    got = json.loads(_html.unescape(m.group(1)))
    assert got["width"] == 1400
    assert got["overflow"] == [], got["overflow"]
    assert got["rec"] and got["rec"]["text"].startswith("Buy ") and got["rec"]["bottom"] < got["height"]
    assert f"costopt {costopt.__version__}" in got["sub"]["text"] and rep.solve_json["as_of"] in got["sub"]["text"]
    assert got["sub"]["bottom"] < got["height"]
    assert_renders_in_chromium(path, tmp_path)
