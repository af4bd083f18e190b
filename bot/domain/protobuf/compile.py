"""``.proto`` text to descriptors with protoc itself (``grpc_tools.protoc``, in this process): the schema and the files
it imports (references, by import path), with source positions. The imports the registry provides itself need no
text: Google's well-known types (``google/protobuf/*.proto``, shipped with protoc) and Confluent's
``confluent/meta.proto`` and ``confluent/type/decimal.proto``. CPU-bound: call it off the event loop."""

from __future__ import annotations

import os
import re
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

PROVIDED = Path(__file__).with_name("provided")
ROOT = "schema.proto"  # the name the schema itself is compiled under (a reference may not take it)
_LOCK = threading.Lock()  # protoc writes its errors to file descriptor 2: one compilation at a time per process


class ProtoError(ValueError):
    """The text is not a Protobuf schema protoc accepts: its own message, with the file and line."""


def compile_proto(text: str, refs: Mapping[str, str] | None = None) -> Any:
    """The ``FileDescriptorSet`` of ``text`` and of every file it imports (dependencies first, the schema last)."""
    refs = dict(refs or {})
    for name in refs:
        path = PurePosixPath(name)
        if path.is_absolute() or ".." in path.parts or not name.endswith(".proto"):
            raise ProtoError(f"reference {name!r}: an import path such as 'common/address.proto' (relative, ending in .proto)")
    if ROOT in refs:
        raise ProtoError(f"reference {ROOT!r}: that name is the schema's own; name the import as the schema imports it")
    return compile_tree({**refs, ROOT: text}, ["."], [ROOT], source_info=False)


def compile_tree(tree: Mapping[str, str], roots: Sequence[str], inputs: Sequence[str], *, source_info: bool = True) -> Any:
    """The ``FileDescriptorSet`` of the ``inputs`` (paths in ``tree``) and of everything they import, each file named by
    its path under the first of ``roots`` (folders of ``tree``) that holds it, as protoc names files by its ``-I``;
    ``source_info``: with each element's position in its file (what Buf's findings need)."""
    from google.protobuf import descriptor_pb2  # imported here: what the Avro-only paths (and the CLI's start) never pay
    from grpc_tools import protoc

    well_known = str(Path(protoc.__file__).with_name("_proto"))
    with tempfile.TemporaryDirectory(prefix="changeops-proto-") as folder:
        for name, body in tree.items():
            target = Path(folder, name)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(body, encoding="utf-8")
        out = Path(folder, "out.pb")
        argv = ["protoc", *(f"-I{Path(folder, root)}" for root in roots), f"-I{PROVIDED}", f"-I{well_known}", "--include_imports",
                *(["--include_source_info"] if source_info else []), f"--descriptor_set_out={out}", *(str(Path(folder, name)) for name in inputs)]
        code, errors = _run(protoc.main, argv)
        if code != 0 or not out.exists():
            raise ProtoError(_message(errors, folder, roots) or f"protoc refused the schema (exit {code})")
        found = descriptor_pb2.FileDescriptorSet()
        found.ParseFromString(out.read_bytes())
    return found


def _run(main: object, argv: list[str]) -> tuple[int, str]:
    """protoc's exit code and what it wrote to stderr (its C++ writes to the descriptor, not to ``sys.stderr``)."""
    with _LOCK, tempfile.TemporaryFile() as captured:
        saved = os.dup(2)
        os.dup2(captured.fileno(), 2)
        try:
            code = int(main(argv))  # type: ignore[operator]
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        captured.seek(0)
        return code, captured.read().decode("utf-8", "replace")


def _message(errors: str, folder: str, roots: Sequence[str]) -> str:
    """protoc's lines with the scratch folder taken out: ``schema.proto:4:3: "int33" is not defined.``"""
    places = sorted({str(Path(folder, root)) for root in roots} | {folder}, key=len, reverse=True)
    pattern = "|".join(rf"{re.escape(place)}/?" for place in places)
    lines = [re.sub(pattern, "", line).strip() for line in errors.splitlines() if line.strip()]
    return "; ".join(line for line in lines if "warning" not in line.lower() and "no syntax specified" not in line.lower())[:2000]
