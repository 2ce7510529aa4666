"""The harness's one build step beyond pyproject.toml: the start-up ``.pth`` file.

``evalrs_harness_old_modules.pth`` goes to the root of the installed packages (beside
``evaluation/``), for a wheel and for an editable install alike; Python runs its line at every
start (``_evalrs_startup``), which registers the finder of the 2022/2023 module names.
Everything else is declared in pyproject.toml.
"""

from __future__ import annotations

import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

#: The start-up file, named to sort after setuptools' own editable ``__editable__*.pth``
#: (Python runs them in name order, and an editable install imports ``_evalrs_startup``
#: through the finder that file registers).
PTH = "evalrs_harness_old_modules.pth"


class BuildWithStartupHook(build_py):
    """``build_py`` that also puts the start-up ``.pth`` at the root of the install."""

    def run(self) -> None:
        super().run()
        here = os.path.dirname(os.path.abspath(__file__))
        if getattr(self, "editable_mode", False):
            # An editable wheel holds what the `install` command writes (setuptools points
            # its install_lib at the wheel's root); build_lib is discarded.
            target = self.get_finalized_command("install").install_lib
        else:
            target = self.build_lib
        os.makedirs(target, exist_ok=True)
        shutil.copyfile(os.path.join(here, PTH), os.path.join(target, PTH))

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), os.path.join(self.build_lib, PTH)]


setup(cmdclass={"build_py": BuildWithStartupHook})
