"""The real ModuleDepFinder of the installed ansible-core, called the way recursive_finder
calls it, and helpers shared by the finder tests."""

from __future__ import annotations

import pathlib

import ansible
from ansible.executor import module_common as mc

from ansible_accel._activation import core_minor

CORE_ROOT = pathlib.Path(ansible.__file__).parent
GOLDEN = pathlib.Path(__file__).parent / "golden"


def model_dep_finder(module_fqn: str, source: bytes | str, is_pkg_init: bool):
    """``(submodules, optional_imports, embeds-or-None)`` from ansible-core, or raises its error."""
    if core_minor() >= (2, 21):
        finder = mc.ModuleDepFinder(module_fqn, source, is_pkg_init=is_pkg_init)
        return set(finder.submodules), set(finder.optional_imports), set(finder.embeds)
    tree = mc._compile_module_ast(module_fqn, source)
    finder = mc.ModuleDepFinder(module_fqn, tree, is_pkg_init)
    return set(finder.submodules), set(finder.optional_imports), None


def core_python_files() -> list[tuple[str, pathlib.Path, bool]]:
    """(fqn, path, is_pkg_init) for every .py file of ansible-core's modules and module_utils."""
    files = []
    for sub in ("modules", "module_utils"):
        for path in sorted((CORE_ROOT / sub).rglob("*.py")):
            parts = path.relative_to(CORE_ROOT.parent).with_suffix("").parts
            is_pkg_init = parts[-1] == "__init__"
            if is_pkg_init:
                parts = parts[:-1]
            files.append((".".join(parts), path, is_pkg_init))
    return files


def builtin_modules() -> list[pathlib.Path]:
    return sorted(p for p in (CORE_ROOT / "modules").glob("*.py") if p.name != "__init__.py")
