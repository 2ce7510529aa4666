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


def main() -> None:
    (HERE / "evaluation_loop.svg").write_text(evaluation_loop(), encoding="utf-8")
    (HERE / "prediction_format.svg").write_text(prediction_format(), encoding="utf-8")


if __name__ == "__main__":
    main()
