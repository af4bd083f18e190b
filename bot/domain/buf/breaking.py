"""``buf breaking`` as ChangeOps runs it: two trees of ``.proto`` files (path -> text, relative to the configuration's
folder), each module compiled by protoc on both sides, and the rules its configuration uses run on the pair. Findings are
Buf's: rule id, file (relative to the configuration's folder), line and column from the source, message. CPU-bound."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import PurePosixPath
from typing import Any

from bot.domain.buf.config import Breaking, Module, default_modules, rule_ids
from bot.domain.buf.image import Image, image_of
from bot.domain.buf.rules import RULES, BufFinding
from bot.domain.protobuf.compile import ROOT, ProtoError, compile_tree

UNSTABLE = re.compile(r"v[1-9]\d*(test\w*|(p[1-9]\d*)?(alpha|beta)([1-9]\d*)?)")  # Buf's unstable package versions: v1alpha1, v2beta, v1test


def unstable(package: str) -> bool:
    """Whether a package's last component is an alpha, beta or test version (``acme.pay.v1beta1``)."""
    return bool(UNSTABLE.fullmatch(package.rsplit(".", 1)[-1])) if package else False


def breaking(previous: Mapping[str, str], current: Mapping[str, str], modules: list[Module] | None = None,
             previous_layout: list[Module] | None = None) -> list[BufFinding]:
    """Every finding of the modules' rules, sorted by file, line and column; a ProtoError when a side does not compile.
    ``previous_layout``: the previous tree's own modules (its buf.yaml's roots or paths), when they are not the current
    ones: its files are then known by their paths within those, as Buf builds each input by its own configuration."""
    found: list[BufFinding] = []
    modules = modules or default_modules()
    roots = [m.path for m in modules]
    if previous_layout is not None and [m.path for m in previous_layout] == roots:
        previous_layout = None  # laid out alike: each module is paired with its own
    for module in modules:
        after = _image(current, module, roots)
        if previous_layout is None:
            before = _image(previous, module, roots)
        else:
            others = {name for m in modules if m is not module for name in module_files(current, m)}
            before = _laid_out(previous, previous_layout, module.breaking.ignore_unstable_packages, others)
        rules = module.breaking
        for rule_id in sorted(rules.rules):
            for finding in RULES[rule_id].check(before, after):
                if not rules.ignores(rule_id, finding.file):
                    found.append(finding if module.path == "." else replace(finding, file=str(PurePosixPath(module.path, finding.file))))
    return sorted(set(found), key=lambda f: (f.file, f.line, f.column, f.rule, f.message))


def module_files(tree: Mapping[str, str], module: Module) -> dict[str, str]:
    """The module's own ``.proto`` files, by their paths within it (its excludes left out)."""
    prefix = "" if module.path == "." else module.path.rstrip("/") + "/"
    own = {name[len(prefix):]: text for name, text in tree.items() if name.endswith(".proto") and name.startswith(prefix)}
    return {name: text for name, text in own.items() if not any(name == e or name.startswith(e.rstrip("/") + "/") for e in module.excludes)}


def _compiled(tree: Mapping[str, str], module: Module, roots: list[str]) -> tuple[list[Any], dict[str, str]]:
    """The module's files compiled (with what they import, found under ``roots``), and its own files' sources."""
    own = module_files(tree, module)
    if not own:
        return [], {}
    prefix = "" if module.path == "." else module.path.rstrip("/") + "/"
    return list(compile_tree(tree, [module.path, *(r for r in roots if r != module.path)], [prefix + name for name in sorted(own)]).file), own


def _image(tree: Mapping[str, str], module: Module, roots: list[str]) -> Image:
    files, own = _compiled(tree, module, roots)
    keep = {f.name for f in files if f.name in own and not (module.breaking.ignore_unstable_packages and unstable(f.package))}
    return image_of(files, keep, own)


def _laid_out(tree: Mapping[str, str], layout: list[Module], ignore_unstable: bool, others: set[str]) -> Image:
    """The image of a tree built by its own modules, less the files another current module holds."""
    files: dict[str, Any] = {}
    keep: set[str] = set()
    texts: dict[str, str] = {}
    for module in layout:
        compiled, own = _compiled(tree, module, [m.path for m in layout])
        files.update({f.name: f for f in compiled if f.name not in files})
        keep |= {f.name for f in compiled if f.name in own and f.name not in others and not (ignore_unstable and unstable(f.package))}
        texts.update(own)
    return image_of(files.values(), keep, texts)


def subject_breaking(old: str, new: str, old_refs: Mapping[str, str], new_refs: Mapping[str, str], names: Sequence[str]) -> dict[str, Any]:
    """A subject's new version against its current one by the Buf categories or rules ``names`` (buf.yaml v2's): the
    schema alone is the module, its imports (references, by import path) what it depends on. ``{"rules", "findings"}``,
    or ``{"rules", "error"}`` when a side does not compile."""
    label = ", ".join(names)
    module = Module(".", Breaking("v2", rule_ids("v2", list(names), []), label), tuple(sorted(set(old_refs) | set(new_refs))))
    try:
        found = breaking({**old_refs, ROOT: old}, {**new_refs, ROOT: new}, [module])
    except ProtoError as err:
        return {"rules": label, "error": str(err)}
    return {"rules": label, "findings": [asdict(f) for f in found]}
