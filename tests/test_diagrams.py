"""The documentation's diagrams: drawn by images/make_diagrams.py, up to date, and readable."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

from tests._syntax_trees import syntax_tree, walked

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "images"


def _load_script():
    """The images/make_diagrams.py module, loaded from its file."""
    spec = importlib.util.spec_from_file_location("make_diagrams", IMAGES / "make_diagrams.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


diagrams = _load_script()


def _boxes() -> dict[str, tuple[int, int, int, int]]:
    """Every box of the architecture picture: name -> (left, top, right, bottom)."""
    boxes = {name: (x, diagrams.ROWS[layer], x + w, diagrams.ROWS[layer] + diagrams.BOX_H)
             for name, (layer, x, w, _) in diagrams.PACKAGES.items()}
    layer, x, w, title, _ = diagrams.RESULTS
    boxes[title] = (x, diagrams.ROWS[layer], x + w, diagrams.ROWS[layer] + diagrams.BOX_H)
    return boxes


def _inside(point, rect, margin=1.0) -> bool:
    """Whether ``point`` lies strictly inside ``rect``, ``margin`` away from its border."""
    x, y = point
    left, top, right, bottom = rect
    return left + margin < x < right - margin and top + margin < y < bottom - margin


def _on_border(point, rect) -> bool:
    """Whether ``point`` lies on the border of ``rect``."""
    x, y = point
    left, top, right, bottom = rect
    on_side = x in (left, right) and top <= y <= bottom
    return on_side or (y in (top, bottom) and left <= x <= right)


def _samples(points, step=1.0):
    """Points every ``step`` pixels along the polyline ``points``."""
    for (x1, y1), (x2, y2) in zip(points, points[1:]):
        n = max(1, int(max(abs(x2 - x1), abs(y2 - y1)) / step))
        for i in range(n + 1):
            yield x1 + (x2 - x1) * i / n, y1 + (y2 - y1) * i / n


@pytest.mark.parametrize("name", ["evaluation_loop", "prediction_format", "architecture"])
def test_svg_files_are_what_the_script_draws(name):
    assert (IMAGES / f"{name}.svg").read_text(encoding="utf-8") == getattr(diagrams, name)()


def test_architecture_shows_every_package_and_top_level_module():
    packages = {f"{p.parent.name}/" for p in (ROOT / "evaluation").glob("*/__init__.py")}
    modules = {"dataset.py", "errors.py", "model.py", "predictions.py"}
    assert packages | modules <= set(diagrams.PACKAGES)
    assert "submission.py" in diagrams.PACKAGES


def test_architecture_boxes_do_not_overlap():
    boxes = list(_boxes().items())
    for i, (name, (left, top, right, bottom)) in enumerate(boxes):
        for other, (l2, t2, r2, b2) in boxes[i + 1:]:
            apart = right <= l2 or r2 <= left or bottom <= t2 or b2 <= top
            assert apart, f"{name} overlaps {other}"


def test_architecture_arrows_join_their_boxes_and_cross_none():
    boxes = _boxes()
    fold = [(name, nxt, points) for (name, points), (nxt, _) in
            zip(diagrams.FOLD_PATH, diagrams.FOLD_PATH[1:])]
    for source, target, points in [*diagrams.IMPORTS, *fold]:
        assert _on_border(points[0], boxes[source]), f"{source} -> {target} starts off {source}"
        assert _on_border(points[-1], boxes[target]), f"{source} -> {target} ends off {target}"
        crossed = {n for p in _samples(points) for n, rect in boxes.items() if _inside(p, rect)}
        assert not crossed, f"{source} -> {target} runs across {sorted(crossed)}"


def test_architecture_import_arrows_never_run_upwards_nor_in_a_cycle():
    for source, target, _ in diagrams.IMPORTS:
        assert diagrams.PACKAGES[source][0] >= diagrams.PACKAGES[target][0], (source, target)
    imports = {}
    for source, target, _ in diagrams.IMPORTS:
        imports.setdefault(source, set()).add(target)
    reached = {name: set(targets) for name, targets in imports.items()}
    for _ in diagrams.PACKAGES:  # the transitive closure, one more step each round
        for targets in reached.values():
            targets |= set().union(*(imports.get(t, set()) for t in targets))
    assert [name for name, targets in reached.items() if name in targets] == []


def _picture_name(module: str) -> str | None:
    """The box that stands for ``module`` (``evaluation.x.y``), or None when none does."""
    parts = module.split(".")
    if parts[0] != "evaluation" or len(parts) == 1:
        return None
    if (ROOT / "evaluation" / parts[1] / "__init__.py").exists():
        return f"{parts[1]}/"
    name = f"{parts[1]}.py"
    return name if name in diagrams.PACKAGES else None


def _imports_in_code() -> set[tuple[str, str]]:
    """(importer, imported) for every import between two boxes, read from the source, inside
    functions too (the few there are say why: ``tests/test_architecture.py``)."""
    files = [*(ROOT / "evaluation").rglob("*.py"), ROOT / "submission.py"]
    found = set()
    for file in files:
        relative = file.relative_to(ROOT).with_suffix("")
        source = "submission.py" if file.name == "submission.py" and len(relative.parts) == 1 \
            else _picture_name(".".join(relative.parts))
        for node in walked(syntax_tree(file)):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                modules = [node.module]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            else:
                continue
            for target in filter(None, map(_picture_name, modules)):
                if source and target != source:
                    found.add((source, target))
    return found


def test_architecture_draws_the_imports_of_the_code():
    """Every import between packages is an arrow, and every arrow an import in the code.

    errors.py and _util/ get no arrows from above (every package may import them), and cli/
    shows only its import of runner/: it imports whatever its commands use. Since no arrow runs
    upwards, this also keeps the packages free of import cycles.
    """
    drawn = {(source, target) for source, target, _ in diagrams.IMPORTS}
    foundation = {"errors.py", "_util/"}
    in_code = {(s, t) for s, t in _imports_in_code()
               if (t not in foundation or s in foundation) and (s != "cli/" or t == "runner/")}
    assert in_code - drawn == set(), "imports missing from the picture"
    assert drawn - in_code == set(), "arrows with no import in the code"


def test_architecture_text_fits_its_box():
    matplotlib = pytest.importorskip("matplotlib")
    image_font = pytest.importorskip("PIL.ImageFont")
    fonts = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
    bold = image_font.truetype(str(fonts / "DejaVuSans-Bold.ttf"), 14)
    regular = image_font.truetype(str(fonts / "DejaVuSans.ttf"), 12)
    _, _, w, title, lines = diagrams.RESULTS
    texts = [(title, w, lines), *((n, spec[2], spec[3]) for n, spec in diagrams.PACKAGES.items())]
    badged = {name for name, _ in diagrams.FOLD_PATH}
    for name, width, lines in texts:
        # a step's badge takes the first 26 px of the box, on both sides of a centred title
        assert bold.getlength(name) <= width - (52 if name in badged else 16), name
        for line in lines:
            assert regular.getlength(line) <= width - 16, f"{name}: {line}"
