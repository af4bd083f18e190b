"""``buf.yaml``'s breaking section, as Buf reads each version of it: ``v1beta1`` (``build.roots``), ``v1`` (the file's
folder is the module) and ``v2`` (``modules``, each with its own ``breaking`` or the file's). Pure: the text comes in."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

import yaml

from bot.domain.buf.rules import CATEGORIES, DEPRECATED, RULES, VERSIONS

BREAKING_KEYS = {"use", "except", "ignore", "ignore_only", "ignore_unstable_packages"}


class BufConfigError(ValueError):
    """The configuration is not one Buf would take: what and where."""


@dataclass(frozen=True)
class Breaking:
    """The rules a module runs and what each ignores."""

    version: str
    rules: frozenset[str]
    label: str = "FILE"  # what the configuration names: ``WIRE_JSON except FIELD_SAME_ONEOF``
    ignore: tuple[str, ...] = ()  # module-relative paths (files or folders) no rule reports on
    ignore_only: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # rule id -> paths it does not report on
    ignore_unstable_packages: bool = False

    def ignores(self, rule: str, path: str) -> bool:
        """Whether ``rule`` says nothing about the file at ``path``."""
        return any(_under(path, p) for p in (*self.ignore, *self.ignore_only.get(rule, ())))


@dataclass(frozen=True)
class Module:
    """A folder of ``.proto`` files (relative to the configuration's folder) and the rules it runs."""

    path: str
    breaking: Breaking
    excludes: tuple[str, ...] = ()


def default_modules(version: str = "v1") -> list[Module]:
    """No configuration: the folder is the module, with Buf's default category (FILE)."""
    return [Module(".", Breaking(version, rule_ids(version, ["FILE"], [])))]


def read_config(text: str, where: str = "buf.yaml", *, layout_only: bool = False) -> list[Module]:
    """The modules a ``buf.yaml`` (or ``buf.work``-less ``buf.yaml`` v2) describes; BufConfigError says what is wrong.
    ``layout_only``: only where the modules are (a previous tree's own configuration); its checks are not read."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise BufConfigError(f"{where}: not YAML: {err}") from None
    if raw is None:
        return default_modules()
    if not isinstance(raw, dict):
        raise BufConfigError(f"{where}: expected a mapping with version and breaking")
    if layout_only:
        raw = {key: value for key, value in raw.items() if key in ("version", "build", "modules")}
        if isinstance(raw.get("modules"), list):
            raw["modules"] = [{k: v for k, v in m.items() if k != "breaking"} if isinstance(m, dict) else m for m in raw["modules"]]
    for key in ("plugins", "policies"):  # checks compiled to WebAssembly: passing over them would report a change as safe
        if raw.get(key):
            raise BufConfigError(f"{where}: {key}: Buf's {key} run checks of their own, which ChangeOps does not run; run `buf breaking` "
                                 f"for them, or take the {key} section out to judge by Buf's built-in rules")
    version = str(raw.get("version", "v1beta1"))
    if version not in VERSIONS:
        raise BufConfigError(f"{where}: version {version!r}: Buf's configuration versions are v1beta1, v1 and v2")
    top = _breaking(raw.get("breaking"), version, f"{where}: breaking", "")
    if version == "v2":
        modules = raw.get("modules") or [{"path": "."}]
        if not isinstance(modules, list):
            raise BufConfigError(f"{where}: modules: expected a list of {{path, breaking}}")
        found = []
        for index, module in enumerate(modules):
            place = f"{where}: modules[{index}]"
            if not isinstance(module, dict) or not isinstance(module.get("path", "."), str):
                raise BufConfigError(f"{place}: expected a mapping with a path")
            path = _relative(str(module.get("path", ".")), f"{place}.path")
            own = _breaking(module["breaking"], version, f"{place}.breaking", path) if "breaking" in module else \
                _breaking(raw.get("breaking"), version, f"{where}: breaking", path)
            found.append(Module(path, own, _paths(module.get("excludes"), f"{place}.excludes", path)))
        return found if modules else [Module(".", top)]
    build = raw.get("build") or {}
    if not isinstance(build, dict):
        raise BufConfigError(f"{where}: build: expected a mapping")
    excludes = _paths(build.get("excludes"), f"{where}: build.excludes", "")
    if version == "v1beta1" and build.get("roots"):
        roots = build["roots"]
        if not isinstance(roots, list) or not all(isinstance(r, str) for r in roots):
            raise BufConfigError(f"{where}: build.roots: expected a list of folders")
        found = []
        for root in roots:
            path = _relative(root, f"{where}: build.roots")
            mine = tuple(_module_relative(e, path) for e in excludes if _under(e, path))
            found.append(Module(path, top, tuple(m for m in mine if m)))
        return found
    return [Module(".", top, excludes)]


def rule_ids(version: str, use: list[str], excluded: list[str]) -> frozenset[str]:
    """The rule ids that ``use`` minus ``except`` name (categories expanded, deprecated ids replaced)."""
    return frozenset(_expand(version, use)) - frozenset(_expand(version, excluded))


def categories(version: str) -> list[str]:
    """The categories a configuration version knows (CSR only from v2)."""
    return [c for c in CATEGORIES if any(c in r.categories.get(version, ()) for r in RULES.values())]


def _expand(version: str, names: list[str]) -> set[str]:
    found: set[str] = set()
    for name in names:
        if name in categories(version):
            found |= {r.id for r in RULES.values() if name in r.categories.get(version, ())}
        elif name in DEPRECATED.get(version, {}):
            found |= set(DEPRECATED[version][name])
        elif name in RULES and version in RULES[name].categories:
            found.add(name)
    return found


def _breaking(raw: Any, version: str, place: str, module: str) -> Breaking:
    raw = raw or {}
    if not isinstance(raw, dict):
        raise BufConfigError(f"{place}: expected a mapping (use, except, ignore, ignore_only, ignore_unstable_packages)")
    known = BREAKING_KEYS | ({"disable_builtin"} if version == "v2" else set())
    for key in sorted(set(raw) - known):
        raise BufConfigError(f"{place}.{key}: unknown key (expected {', '.join(sorted(known))})")
    if not isinstance(raw.get("disable_builtin", False), bool):
        raise BufConfigError(f"{place}.disable_builtin: expected true or false")
    use = [] if raw.get("disable_builtin") else _names(raw.get("use", ["FILE"]), version, f"{place}.use")
    excluded = _names(raw.get("except", []), version, f"{place}.except")
    ignore_only = raw.get("ignore_only") or {}
    if not isinstance(ignore_only, dict):
        raise BufConfigError(f"{place}.ignore_only: expected rule ids or categories, each with a list of paths")
    only: dict[str, tuple[str, ...]] = {}
    for name, paths in ignore_only.items():
        for rule in _expand(version, _names([name], version, f"{place}.ignore_only")):
            only[rule] = only.get(rule, ()) + _paths(paths, f"{place}.ignore_only.{name}", module)
    unstable = raw.get("ignore_unstable_packages", False)
    if not isinstance(unstable, bool):
        raise BufConfigError(f"{place}.ignore_unstable_packages: expected true or false")
    label = ", ".join(use) + (f" except {', '.join(excluded)}" if excluded else "")
    return Breaking(version, rule_ids(version, use, excluded), label, _paths(raw.get("ignore"), f"{place}.ignore", module), only, unstable)


def valid_names(raw: Any, version: str, place: str) -> list[str]:
    """Rule ids and categories as a configuration of ``version`` names them; BufConfigError for anything else."""
    return _names(raw, version, place)


def _names(raw: Any, version: str, place: str) -> list[str]:
    if not isinstance(raw, list) or not all(isinstance(n, str) for n in raw):
        raise BufConfigError(f"{place}: expected a list of rule ids and categories")
    for name in raw:
        known = categories(version)
        if name not in known and name not in DEPRECATED.get(version, {}) and not (name in RULES and version in RULES[name].categories):
            raise BufConfigError(f"{place}: {name!r} is not a breaking rule or category of buf.yaml {version} "
                                 f"(categories: {', '.join(known)}; `bot rules --buf` lists the rules)")
    return list(raw)


def _paths(raw: Any, place: str, module: str) -> tuple[str, ...]:
    """Paths as written (relative to the configuration's folder), made relative to ``module`` (v2 paths include it)."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(p, str) for p in raw):
        raise BufConfigError(f"{place}: expected a list of paths")
    found = []
    for path in raw:
        clean = _relative(path, place)
        if module and module != "." and _under(clean, module):
            clean = _module_relative(clean, module) or "."
        found.append(clean)
    return tuple(found)


def _relative(path: str, place: str) -> str:
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts:
        raise BufConfigError(f"{place}: {path!r} must be a relative path inside the configuration's folder")
    return str(pure)


def _module_relative(path: str, module: str) -> str:
    return "" if path == module else str(PurePosixPath(path).relative_to(module)) if module != "." else path


def _under(path: str, folder: str) -> bool:
    return folder == "." or path == folder or path.startswith(folder.rstrip("/") + "/")
