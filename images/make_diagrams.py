"""Draw the README's diagrams as SVG (no dependencies): ``python images/make_diagrams.py``."""

from __future__ import annotations

from html import escape
from pathlib import Path

HERE = Path(__file__).resolve().parent
FONT = "font-family='DejaVu Sans, Helvetica, Arial, sans-serif'"


def box(x, y, w, h, title, lines=(), fill="#eef4fb", stroke="#2f6fad") -> str:
    out = [f"<rect x='{x}' y='{y}' width='{w}' height='{h}' rx='8' fill='{fill}' "
           f"stroke='{stroke}' stroke-width='1.5'/>",
           f"<text x='{x + w / 2}' y='{y + 20}' text-anchor='middle' font-size='14' "
           f"font-weight='bold' {FONT}>{escape(title)}</text>"]
    for i, line in enumerate(lines):
        out.append(f"<text x='{x + w / 2}' y='{y + 38 + 16 * i}' text-anchor='middle' "
                   f"font-size='12' {FONT}>{escape(line)}</text>")
    return "\n".join(out)


def arrow(x1, y1, x2, y2, label="") -> str:
    out = [f"<line x1='{x1}' y1='{y1}' x2='{x2}' y2='{y2}' stroke='#444' stroke-width='1.5' "
           f"marker-end='url(#head)'/>"]
    if label:
        out.append(f"<text x='{(x1 + x2) / 2 + 6}' y='{(y1 + y2) / 2 + 4}' font-size='11' "
                   f"fill='#555' {FONT}>{escape(label)}</text>")
    return "\n".join(out)


def svg(width, height, body) -> str:
    return (f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
            f"viewBox='0 0 {width} {height}'>\n<defs><marker id='head' markerWidth='10' "
            f"markerHeight='8' refX='9' refY='4' orient='auto'><path d='M0,0 L10,4 L0,8 z' "
            f"fill='#444'/></marker></defs>\n<rect width='100%' height='100%' fill='white'/>\n"
            f"{body}\n</svg>\n")


def evaluation_loop() -> str:
    parts = [
        box(20, 20, 250, 70, "ChallengeDataset", ["synthetic | lfm | directory | MovieLens",
                                                  "events, users, tracks, vectors"]),
        box(330, 20, 330, 70, "fold f = 0 .. num_folds-1", ["sample users (seed + f), k-core,",
                                                             "one held-out track per user"]),
        box(330, 130, 330, 54, "model.train(train_df, **kwargs)"),
        box(330, 214, 330, 54, "model.predict(test users)", ["-> top-k track ids per user"]),
        box(330, 298, 330, 54, "validate_predictions", ["users, catalog, duplicates, -1 padding"]),
        box(330, 382, 330, 70, "EvalRSRecList (+ your tests)",
            ["HIT_RATE, MRR, 5 x MRED,", "BEING_LESS_WRONG, LATENT_DIVERSITY"]),
        box(20, 382, 250, 70, "results/<run id>/fold_f.json", ["written atomically;",
                                                                "a rerun resumes here"],
            fill="#f3f3f3", stroke="#777"),
        box(330, 492, 330, 86, "aggregate", ["mean and std over folds, bootstrap 95 % CIs,",
                                             "phase 1 = mean of the nine tests,",
                                             "phase 2 = gate, normalise, weight"],
            fill="#eef8ee", stroke="#3c8c3c"),
        box(330, 608, 330, 54, "results.json + LEADERBOARD SCORE", fill="#eef8ee",
            stroke="#3c8c3c"),
        arrow(270, 55, 330, 55),
        arrow(495, 90, 495, 130, "train rows"),
        arrow(495, 184, 495, 214, "test user ids"),
        arrow(495, 268, 495, 298),
        arrow(495, 352, 495, 382),
        arrow(330, 417, 270, 417),
        "<polyline points='145,382 145,150 300,150 300,75 330,75' fill='none' stroke='#444' "
        "stroke-width='1.5' marker-end='url(#head)'/>",
        f"<text x='152' y='250' font-size='11' fill='#555' {FONT}>next fold</text>",
        arrow(495, 452, 495, 492, "all folds done"),
        arrow(495, 578, 495, 608),
    ]
    return svg(690, 680, "\n".join(parts))


def prediction_format() -> str:
    cols = ["user_id", '"0"', '"1"', '"2"', "...", '"99"']
    rows = [["17", "5012", "731", "88", "...", "402"],
            ["23", "9", "5012", "1440", "...", "77"],
            ["42", "303", "12", "-1", "...", "-1"]]
    x0, y0, cw, rh = 30, 60, 92, 34
    parts = [f"<text x='{x0}' y='32' font-size='16' font-weight='bold' {FONT}>"
             f"What predict() returns: one row per test user, k ranked track ids</text>"]
    for j, c in enumerate(cols):
        fill = "#dde8f5" if j else "#f6e7c8"
        parts.append(f"<rect x='{x0 + j * cw}' y='{y0}' width='{cw}' height='{rh}' "
                     f"fill='{fill}' stroke='#666'/>")
        parts.append(f"<text x='{x0 + j * cw + cw / 2}' y='{y0 + 22}' text-anchor='middle' "
                     f"font-size='13' font-weight='bold' {FONT}>{escape(c)}</text>")
    for i, row in enumerate(rows):
        y = y0 + (i + 1) * rh
        for j, v in enumerate(row):
            fill = "#fbf3e2" if j == 0 else ("#f2f2f2" if v == "-1" else "white")
            parts.append(f"<rect x='{x0 + j * cw}' y='{y}' width='{cw}' height='{rh}' "
                         f"fill='{fill}' stroke='#999'/>")
            parts.append(f"<text x='{x0 + j * cw + cw / 2}' y='{y + 22}' text-anchor='middle' "
                         f"font-size='13' {FONT}>{escape(v)}</text>")
    notes = [
        "index: user_id (the test users, any order: rows are matched by user_id, not position)",
        'columns "0".."k-1": best first; k = 100 (integer labels are accepted too)',
        "values: track ids from dataset.df_tracks, each at most once per row",
        "-1 pads a shorter list at the end and never hits",
    ]
    for i, n in enumerate(notes):
        parts.append(f"<text x='{x0}' y='{y0 + 5 * rh + 10 + 20 * i}' font-size='13' {FONT}>"
                     f"• {escape(n)}</text>")
    return svg(640, 330, "\n".join(parts))


# ---------------------------------------------------------------------------- architecture

FLOW = "#d9822b"  # one fold's path, drawn over the grey import arrows
ROWS = {7: 20, 6: 130, 5: 240, 4: 350, 3: 460, 2: 570, 1: 680}  # layer -> top of its boxes
BOX_H = 70
WIDTH = 1200  # of the picture; the boxes span x = 120 .. 1150, arrows run down the right margin
LAYER_NAMES = {7: ("2022/2023", "code"), 6: ("entry points",), 5: ("running",),
               4: ("scoring and", "protocols"),
               3: ("contracts", "and the", "dataset"),
               2: ("data, splits,", "metrics,", "standings"), 1: ("foundation",)}

# name -> (layer, x, width, lines): the packages of evaluation/, foundation at the bottom
PACKAGES = {
    "compat/": (7, 120, 470, ["EvalRS 2022/2023 code run unchanged: the 2022 runner,",
                              "dataset and RecList, reclist 0.x modules, helpers"]),
    "submission.py": (6, 410, 180, ["python submission.py", "(submission/MyModel.py)"]),
    "cli/": (6, 620, 300, ["data · score · references · submit",
                           "serve · admin · reproduce · compare · report"]),
    "server/": (6, 950, 200, ["leaderboard: core · db · store", "standings · page · api"]),
    "reproduce/": (5, 120, 180, ["sandbox · uv environment", "predict · score · verdict"]),
    "runner/": (5, 330, 570, ["loop · store (run dir, resume) · result (+ summary) · submit",
                              "checkout (MyModel by path) · checks · references · profile"]),
    "analysis/": (5, 930, 220, ["results · compare", "report · plots"]),
    "baselines/": (4, 120, 160, ["popularity · random", "cbow · bias"]),
    "challenge/": (4, 310, 350, ["spec (tests, slices, weights) · fold state",
                                 "per-user scores · bootstrap · references · scoring"]),
    "challenge_reclist/": (4, 690, 160, ["EvalRSRecList:", "the tests on reclist"]),
    "protocols/": (4, 880, 180, ["holdout (evaluate_split)", "replay · sampled"]),
    "topk/": (3, 120, 110, ["top-k from", "embeddings"]),
    "dataset.py": (3, 260, 160, ["ChallengeDataset", "source + folds"]),
    "model.py": (3, 450, 170, ["RecModel", "train · predict"]),
    "predictions.py": (3, 650, 200, ["validate_predictions", "predictions_frame"]),
    "contract/": (3, 890, 235, ["results format · run hash · eligibility",
                                "payload · HTTP client"]),
    "data/": (2, 120, 320, ["tables · schema · parquet · vectors",
                            "synthetic · lfm · local · movielens · download"]),
    "splits/": (2, 460, 166, ["loo (bootstrapped folds)", "kcore · temporal · audit"]),
    "metrics/": (2, 650, 220, ["ranking · rating · catalog", "registry: the metric library"]),
    "standings/": (2, 895, 255, ["tiers · rank intervals", "win probabilities · Pareto front"]),
    "errors.py": (1, 120, 180, ["every error and warning"]),
    "_util/": (1, 330, 260, ["atomic · jsonable · paths · int64",
                             "validation · arrays · verified · hugepages"]),
    "legacy/": (1, 620, 330, ["2022/2023 arguments and RecList calls,",
                              "song2vec vectors: converted where they enter"]),
    "participant/": (1, 970, 180, ["MyModel by path · seeds", "fingerprint · worker"]),
}
RESULTS = (6, 120, 260, "results/<run id>/", ["fold_f.json, results.json",
                                              "upload to the leaderboard"])

# (importer, imported, the arrow's points); errors.py and _util/ serve every package and get no
# arrow from above, nor do the packages cli/ imports for its commands. Arrows into one box may
# share their last stretch, like branches joining a trunk.
IMPORTS: list[tuple[str, str, list[tuple[int, int]]]] = [
    ("compat/", "runner/", [(395, 90), (395, 240)]),
    ("compat/", "challenge/", [(395, 90), (395, 220), (305, 220), (305, 330), (370, 330),
                               (370, 350)]),
    ("compat/", "dataset.py", [(395, 90), (395, 220), (305, 220), (305, 460)]),
    ("compat/", "model.py", [(395, 90), (395, 220), (305, 220), (305, 440), (480, 440),
                             (480, 460)]),
    ("compat/", "splits/", [(395, 90), (395, 220), (305, 220), (305, 440), (440, 440),
                            (440, 550), (480, 550), (480, 570)]),
    ("compat/", "challenge_reclist/", [(395, 90), (395, 220), (305, 220), (305, 330),
                                       (740, 330), (740, 350)]),
    ("compat/", "legacy/", [(395, 90), (395, 220), (305, 220), (305, 440), (440, 440),
                            (440, 550), (450, 550), (450, 660), (640, 660), (640, 680)]),
    ("submission.py", "cli/", [(590, 165), (620, 165)]),
    ("submission.py", "runner/", [(500, 200), (500, 240)]),
    ("submission.py", "contract/", [(580, 200), (580, 214), (1170, 214), (1170, 440),
                                    (1100, 440), (1100, 460)]),
    ("cli/", "runner/", [(770, 200), (770, 240)]),
    ("server/", "contract/", [(1150, 165), (1170, 165), (1170, 440), (1100, 440), (1100, 460)]),
    ("server/", "challenge/", [(970, 200), (970, 226), (915, 226), (915, 340), (650, 340),
                               (650, 350)]),
    ("reproduce/", "runner/", [(300, 275), (330, 275)]),
    ("reproduce/", "challenge/", [(280, 310), (280, 340), (370, 340), (370, 350)]),
    ("reproduce/", "contract/", [(140, 310), (140, 326), (1100, 326), (1100, 460)]),
    ("reproduce/", "protocols/", [(140, 310), (140, 326), (1000, 326), (1000, 350)]),
    ("analysis/", "runner/", [(930, 275), (900, 275)]),
    ("analysis/", "challenge/", [(945, 310), (945, 340), (650, 340), (650, 350)]),
    ("analysis/", "contract/", [(1100, 310), (1100, 460)]),
    ("runner/", "dataset.py", [(330, 300), (300, 300), (300, 460)]),
    ("runner/", "challenge/", [(560, 310), (560, 350)]),
    ("runner/", "predictions.py", [(675, 310), (675, 460)]),
    ("runner/", "protocols/", [(895, 310), (895, 350)]),
    ("runner/", "challenge_reclist/", [(820, 310), (820, 350)]),
    ("runner/", "contract/", [(890, 310), (890, 326), (1100, 326), (1100, 460)]),
    ("baselines/", "topk/", [(175, 420), (175, 460)]),
    ("baselines/", "model.py", [(270, 420), (270, 440), (480, 440), (480, 460)]),
    ("challenge/", "data/", [(435, 420), (435, 570)]),
    ("challenge/", "predictions.py", [(655, 420), (655, 460)]),
    ("challenge_reclist/", "challenge/", [(690, 385), (660, 385)]),
    ("challenge_reclist/", "legacy/", [(845, 420), (845, 450), (880, 450), (880, 660),
                                       (900, 660), (900, 680)]),
    ("protocols/", "predictions.py", [(900, 420), (900, 440), (840, 440), (840, 460)]),
    ("challenge/", "metrics/", [(635, 420), (635, 605), (650, 605)]),
    ("protocols/", "metrics/", [(960, 420), (960, 445), (860, 445), (860, 570)]),
    ("protocols/", "splits/", [(960, 420), (960, 445), (860, 445), (860, 560), (600, 560),
                               (600, 570)]),
    ("dataset.py", "data/", [(300, 530), (300, 570)]),
    ("dataset.py", "splits/", [(400, 530), (400, 550), (480, 550), (480, 570)]),
    ("dataset.py", "legacy/", [(410, 530), (410, 545), (452, 545), (452, 655), (660, 655),
                               (660, 680)]),
    ("_util/", "errors.py", [(330, 715), (300, 715)]),
    ("reproduce/", "dataset.py", [(290, 310), (290, 460)]),
    ("analysis/", "standings/", [(1135, 310), (1135, 570)]),
    ("server/", "standings/", [(1150, 185), (1182, 185), (1182, 550), (1143, 550), (1143, 570)]),
    ("runner/", "participant/", [(890, 310), (890, 326), (1192, 326), (1192, 660), (1060, 660),
                                 (1060, 680)]),
    ("reproduce/", "participant/", [(140, 310), (140, 326), (1192, 326), (1192, 660),
                                    (1060, 660), (1060, 680)]),
]

# one fold's path: step number -> (box it happens in, arrow to the next step)
FOLD_PATH = [
    ("dataset.py", [(420, 495), (450, 495)]),
    ("model.py", [(620, 495), (650, 495)]),
    ("predictions.py", [(700, 460), (700, 440), (640, 440), (640, 420)]),
    ("challenge/", [(620, 350), (620, 310)]),
    ("runner/", [(360, 240), (360, 200)]),
    (RESULTS[3], []),
]
FOLD_STEPS = [
    "dataset.py: ChallengeDataset cuts fold f (data/ + splits/)",
    "model.py: model.train(train rows), then model.predict(test users)",
    "predictions.py: validate_predictions checks the top-k frame",
    "challenge/: ChallengeFold gives each test user's scores",
    "runner/: fold_f.json (a rerun resumes); bootstrap, aggregate",
    "results.json, then the upload (runner/ submit)",
]


def path(points, colour="#444", width=1.5, head="head") -> str:
    """An arrow along ``points`` over a white halo, so that crossing arrows stay apart."""
    pts = " ".join(f"{x},{y}" for x, y in points)
    return (f"<polyline points='{pts}' fill='none' stroke='white' stroke-width='{width + 4}'/>\n"
            f"<polyline points='{pts}' fill='none' stroke='{colour}' stroke-width='{width}' "
            f"marker-end='url(#{head})'/>")


def badge(x, y, number) -> str:
    """A numbered orange disc: step ``number`` of a fold's path, centred at (x, y)."""
    return (f"<circle cx='{x}' cy='{y}' r='10' fill='{FLOW}'/>\n"
            f"<text x='{x}' y='{y + 4}' text-anchor='middle' font-size='12' font-weight='bold' "
            f"fill='white' {FONT}>{number}</text>")


def layer_bands() -> list[str]:
    """A light band and a name for each layer, top to bottom."""
    out = []
    for layer, top in ROWS.items():
        fill = "#f6f8fb" if layer % 2 else "#fcfcfd"
        out.append(f"<rect x='10' y='{top - 10}' width='{WIDTH - 20}' "
                   f"height='{BOX_H + 20}' fill='{fill}'/>")
        words = LAYER_NAMES[layer]
        for i, word in enumerate(words):
            y = top + 39 + 15 * i - 7.5 * (len(words) - 1)  # the words centred on the band
            out.append(f"<text x='20' y='{y:g}' font-size='12' fill='#777' "
                       f"{FONT}>{escape(word)}</text>")
    return out


def package_boxes() -> list[str]:
    """The packages as boxes, and the results the runner writes, in green."""
    out = [box(x, ROWS[layer], w, BOX_H, name, lines)
           for name, (layer, x, w, lines) in PACKAGES.items()]
    layer, x, w, title, lines = RESULTS
    out.append(box(x, ROWS[layer], w, BOX_H, title, lines, fill="#eef8ee", stroke="#3c8c3c"))
    return out


def fold_path() -> list[str]:
    """One fold's path: orange arrows between the boxes and a numbered badge on each box."""
    corners = {name: (x, ROWS[layer]) for name, (layer, x, _, _) in PACKAGES.items()}
    corners[RESULTS[3]] = (RESULTS[1], ROWS[RESULTS[0]])
    out = [path(points, FLOW, 2.5, "flow") for _, points in FOLD_PATH if points]
    for number, (name, _) in enumerate(FOLD_PATH, start=1):
        x, y = corners[name]
        out.append(badge(x + 14, y + 14, number))
    return out


def legend(top) -> list[str]:
    """What the grey and the orange arrows mean, and the steps of a fold's path."""
    out = [path([(20, top), (60, top)]),
           f"<text x='70' y='{top + 4}' font-size='12' {FONT}>imports, never upwards "
           f"(errors.py and _util/ serve every package: not drawn; cli/ also imports what its "
           f"commands use)</text>",
           path([(20, top + 26), (60, top + 26)], FLOW, 2.5, "flow"),
           f"<text x='70' y='{top + 30}' font-size='12' {FONT}>one fold's path:</text>"]
    for i, step in enumerate(FOLD_STEPS):
        x, y = 70 + 530 * (i // 3), top + 54 + 22 * (i % 3)
        out += [badge(x + 10, y - 4, i + 1),
                f"<text x='{x + 26}' y='{y}' font-size='12' {FONT}>{escape(step)}</text>"]
    return out


def architecture() -> str:
    """The packages in layers, what imports what, and the path of one fold through them."""
    flow_head = (f"<defs><marker id='flow' markerUnits='userSpaceOnUse' markerWidth='12' "
                 f"markerHeight='10' refX='11' refY='5' orient='auto'><path "
                 f"d='M0,0 L12,5 L0,10 z' fill='{FLOW}'/></marker></defs>")
    imports = [path(points) for _, _, points in IMPORTS]
    parts = [flow_head, *layer_bands(), *package_boxes(), *imports, *fold_path(),
             *legend(ROWS[1] + BOX_H + 36)]
    return svg(WIDTH, 900, "\n".join(parts))


def main() -> None:
    (HERE / "evaluation_loop.svg").write_text(evaluation_loop(), encoding="utf-8")
    (HERE / "prediction_format.svg").write_text(prediction_format(), encoding="utf-8")
    (HERE / "architecture.svg").write_text(architecture(), encoding="utf-8")


if __name__ == "__main__":
    main()
