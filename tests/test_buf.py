"""Buf's breaking rules on folders of .proto files, as `buf breaking` reads them: every finding with Buf's rule id, the file
and the line and column where the change is in the current source; the categories of each buf.yaml version (v1beta1's
build.roots, v1, v2's modules), use / except / ignore / ignore_only / ignore_unstable_packages; the command line. Places
follow Buf's: an option or feature where the element sets it, a map's entry at the map field, a deletion on the nearest
surviving message; the previous folder laid out by its own buf.yaml; plugins and policies, which are not run, refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli import main
from bot.domain.buf.breaking import breaking, unstable
from bot.domain.buf.config import BufConfigError, read_config
from bot.domain.buf.rules import RULES

ORDER_V1 = """syntax = "proto3";
package shop.v1;

import "shop/v1/money.proto";

option go_package = "example.com/shop/v1";

message Order {
  string id = 1;
  int32 quantity = 2;
  Money price = 3;
  string note = 4;
  oneof payment {
    string card = 5;
    string iban = 6;
  }
  reserved 10 to 20;
  Status status = 7;
  map<string, string> labels = 8;
}

enum Status {
  STATUS_UNSPECIFIED = 0;
  OPEN = 1;
  SHIPPED = 2;
}

service Orders {
  rpc Get(Order) returns (Order);
  rpc Cancel(Order) returns (Order);
}
"""
MONEY = 'syntax = "proto3";\npackage shop.v1;\n\nmessage Money {\n  int64 units = 1;\n  string currency = 2;\n}\n'
ORDER_V2 = """syntax = "proto3";
package shop.v1;

import "shop/v1/money.proto";

option go_package = "example.com/shop/v2";

message Order {
  string id = 1;
  int64 quantity = 2;
  Money price = 3;
  oneof payment {
    string card = 5;
  }
  string iban = 6;
  reserved 10 to 15;
  Status status = 7;
  repeated string labels = 8;
}

enum Status {
  STATUS_UNSPECIFIED = 0;
  OPENED = 1;
}

service Orders {
  rpc Get(Order) returns (stream Order);
}
"""


def found(previous: dict[str, str], current: dict[str, str], config: str | None = None) -> list[tuple[str, str, int, int]]:
    return [(f.rule, f.file, f.line, f.column) for f in breaking(previous, current, read_config(config) if config else None)]


def write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


PREVIOUS = {"shop/v1/order.proto": ORDER_V1, "shop/v1/money.proto": MONEY}
CURRENT = {"shop/v1/order.proto": ORDER_V2, "shop/v1/money.proto": MONEY}


def test_the_file_category_by_default_with_each_finding_where_the_change_is() -> None:
    order = "shop/v1/order.proto"
    assert found(PREVIOUS, CURRENT) == [
        ("FILE_SAME_GO_PACKAGE", order, 6, 1),
        ("FIELD_NO_DELETE", order, 8, 1),  # on the message: the field is gone
        ("MESSAGE_NO_DELETE", order, 8, 1),  # the map's entry message went with the map
        ("RESERVED_MESSAGE_NO_DELETE", order, 8, 1),
        ("FIELD_SAME_TYPE", order, 10, 3),  # at the type: int32 -> int64
        ("FIELD_SAME_CARDINALITY", order, 15, 3),  # out of the oneof: presence changed
        ("FIELD_SAME_ONEOF", order, 15, 3),
        ("FIELD_SAME_CARDINALITY", order, 18, 3),  # map -> repeated
        ("FIELD_SAME_TYPE", order, 18, 12),
        ("ENUM_VALUE_NO_DELETE", order, 21, 1),
        ("ENUM_VALUE_SAME_NAME", order, 23, 12),  # at the number of the renamed value
        ("RPC_NO_DELETE", order, 26, 1),
        ("RPC_SAME_SERVER_STREAMING", order, 27, 3)]
    messages = {f.rule: f.message for f in breaking(PREVIOUS, CURRENT)}
    assert messages["FIELD_NO_DELETE"] == 'Previously present field "4" with name "note" on message "Order" was deleted.'
    assert messages["RESERVED_MESSAGE_NO_DELETE"] == ('Previously present reserved range "10 to 20" on message "Order" is missing values: '
                                                      "[16,20] were removed.")
    assert messages["ENUM_VALUE_SAME_NAME"] == 'Enum value "1" on enum "Status" changed name from "OPEN" to "OPENED".'
    assert found(PREVIOUS, PREVIOUS) == []


def test_wire_and_wire_json_see_only_what_breaks_the_encoding() -> None:
    wire = [(rule, line) for rule, _, line, _ in found(PREVIOUS, CURRENT, "version: v1\nbreaking:\n  use: [WIRE]\n")]
    assert wire == [("FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED", 8), ("RESERVED_MESSAGE_NO_DELETE", 8), ("FIELD_SAME_ONEOF", 15),
                    ("FIELD_WIRE_COMPATIBLE_TYPE", 18), ("ENUM_VALUE_NO_DELETE_UNLESS_NUMBER_RESERVED", 21), ("RPC_SAME_SERVER_STREAMING", 27)]
    wire_json = {rule for rule, *_ in found(PREVIOUS, CURRENT, "version: v2\nbreaking:\n  use: [WIRE_JSON]\n")}
    assert {"FIELD_WIRE_JSON_COMPATIBLE_TYPE", "FIELD_WIRE_JSON_COMPATIBLE_CARDINALITY", "ENUM_VALUE_SAME_NAME",
            "FIELD_NO_DELETE_UNLESS_NAME_RESERVED"} <= wire_json  # int32 -> int64 changes JSON; map -> repeated too
    assert "FIELD_WIRE_COMPATIBLE_TYPE" not in wire_json and "FILE_SAME_GO_PACKAGE" not in wire_json
    # the number and the name reserved: nothing left for WIRE_JSON to say about the deleted field
    reserved = ORDER_V2.replace("reserved 10 to 15;", 'reserved 4, 10 to 20;\n  reserved "note";')
    left = {rule for rule, *_ in found(PREVIOUS, {**CURRENT, "shop/v1/order.proto": reserved}, "version: v2\nbreaking:\n  use: [WIRE_JSON]\n")}
    assert not left & {"FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED", "FIELD_NO_DELETE_UNLESS_NAME_RESERVED", "RESERVED_MESSAGE_NO_DELETE"}


def test_use_except_ignore_and_ignore_only() -> None:
    config = ("version: v1\nbreaking:\n  use: [FILE]\n  except: [FIELD_SAME_ONEOF, FILE_SAME_GO_PACKAGE]\n"
              "  ignore_only:\n    WIRE: [shop/v1/order.proto]\n")
    rules = [rule for rule, *_ in found(PREVIOUS, CURRENT, config)]
    assert "FIELD_SAME_ONEOF" not in rules and "FILE_SAME_GO_PACKAGE" not in rules and "FIELD_NO_DELETE" in rules
    assert "RPC_SAME_SERVER_STREAMING" not in rules  # a WIRE rule, ignored for that file by the category
    assert found(PREVIOUS, CURRENT, "version: v1\nbreaking:\n  ignore: [shop]\n") == []
    moved = {"shop/v1/order.proto": ORDER_V1.replace('import "shop/v1/money.proto";', 'import "shop/v1/money.proto";\nimport "shop/v1/status.proto";')
             .split("enum Status")[0] + "service Orders {\n  rpc Get(Order) returns (Order);\n  rpc Cancel(Order) returns (Order);\n}\n",
             "shop/v1/money.proto": MONEY, "shop/v1/status.proto": 'syntax = "proto3";\npackage shop.v1;\n\nenum Status {\n  STATUS_UNSPECIFIED = 0;\n'
                                                                     "  OPEN = 1;\n  SHIPPED = 2;\n}\n"}
    assert found(PREVIOUS, moved) == [("ENUM_NO_DELETE", "shop/v1/order.proto", 0, 0)]  # moved to another file: FILE says so
    assert found(PREVIOUS, moved, "version: v1\nbreaking:\n  use: [PACKAGE]\n") == []  # within its package: PACKAGE does not


def test_v2_modules_and_unstable_packages() -> None:
    beta = {"proto/shop/v1beta1/cart.proto": 'syntax = "proto3";\npackage shop.v1beta1;\n\nmessage Cart {\n  string id = 1;\n  int32 items = 2;\n}\n'}
    before = {f"proto/{k}": v for k, v in PREVIOUS.items()} | beta
    after = {f"proto/{k}": v for k, v in CURRENT.items()} | {k: v.replace("  int32 items = 2;\n", "") for k, v in beta.items()}
    config = "version: v2\nmodules:\n  - path: proto\nbreaking:\n  use: [WIRE]\n"
    rules = [(rule, file) for rule, file, *_ in found(before, after, config)]
    assert ("FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED", "proto/shop/v1beta1/cart.proto") in rules
    assert ("FIELD_WIRE_COMPATIBLE_TYPE", "proto/shop/v1/order.proto") in rules  # paths from the configuration's folder
    quiet = config.replace("use: [WIRE]", "use: [WIRE]\n  ignore_unstable_packages: true\n  ignore: [proto/shop/v1/order.proto]")
    assert found(before, after, quiet) == []
    per_module = "version: v2\nmodules:\n  - path: proto\n    breaking:\n      use: [FIELD_SAME_TYPE]\nbreaking:\n  use: [PACKAGE]\n"
    assert {rule for rule, *_ in found(before, after, per_module)} == {"FIELD_SAME_TYPE"}
    assert unstable("shop.v1beta1") and unstable("shop.v2alpha") and unstable("shop.v1test") and unstable("shop.v1p1alpha1")
    assert not unstable("shop.v1") and not unstable("shop.beta") and not unstable("")


def test_v1beta1_roots_import_across_roots_and_deprecated_ids() -> None:
    before = {"api/shop/order.proto": ORDER_V1.replace("shop/v1/money.proto", "common/money.proto").replace("package shop.v1;", "package shop;"),
              "vendor/common/money.proto": MONEY.replace("package shop.v1;", "package shop;")}
    after = {**before, "api/shop/order.proto": before["api/shop/order.proto"].replace("  map<string, string> labels = 8;", "  repeated string labels = 8;")}
    config = "version: v1beta1\nbuild:\n  roots: [api, vendor]\nbreaking:\n  use: [FIELD_SAME_LABEL]\n"
    assert found(before, after, config) == [("FIELD_SAME_CARDINALITY", "api/shop/order.proto", 19, 3)]


def test_every_rule_has_its_categories_and_bad_configurations_say_what_is_wrong() -> None:
    assert len(RULES) >= 65
    assert RULES["FIELD_WIRE_COMPATIBLE_TYPE"].categories == {"v1": ("WIRE",), "v2": ("WIRE",)}
    assert RULES["FILE_SAME_PACKAGE"].categories["v1beta1"] == ("FILE",) and "WIRE" in RULES["FILE_SAME_PACKAGE"].categories["v1"]
    for text, words in [("version: v3\n", "Buf's configuration versions are v1beta1, v1 and v2"),
                        ("version: v1\nbreaking:\n  use: [WIRES]\n", "'WIRES' is not a breaking rule or category of buf.yaml v1"),
                        ("version: v1\nbreaking:\n  use: [CSR]\n", "'CSR' is not a breaking rule or category of buf.yaml v1"),
                        ("version: v1\nbreaking:\n  ignore: [../elsewhere]\n", "must be a relative path"),
                        ("version: v1\nbreaking:\n  usage: [FILE]\n", "breaking.usage: unknown key"),
                        ("version: v1\nbreaking: [FILE]\n", "expected a mapping"),
                        ("version: [v1\n", "not YAML")]:
        with pytest.raises(BufConfigError, match=words.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
            read_config(text)


def test_the_command_line_compares_folders(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    previous, current = write(tmp_path / "prev", PREVIOUS), write(tmp_path / "cur", CURRENT)
    assert main(["classify", str(previous), str(current), "--type", "protobuf"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "BREAKING by Buf's rules (FILE; 13 findings)"
    assert f'{current}/shop/v1/order.proto:10:3:Field "2" with name "quantity" on message "Order" changed type from "int32" to "int64". ' \
           "(FIELD_SAME_TYPE)" in out
    (current / "buf.yaml").write_text("version: v1\nbreaking:\n  use: [WIRE]\n")  # the current folder's configuration by default
    assert main(["classify", str(previous), str(current), "--format", "json", "--fail-on", "breaking"]) == 1
    answer = json.loads(capsys.readouterr().out)
    assert answer["level"] == "breaking" and answer["rules"] == "WIRE" and len(answer["findings"]) == 6
    assert answer["findings"][0] == {"rule": "FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED", "file": f"{current}/shop/v1/order.proto", "line": 8,
                                     "column": 1, "level": "breaking",
                                     "message": 'Previously present field "4" with name "note" on message "Order" was deleted without reserving '
                                                'the number "4".'}
    assert main(["classify", str(previous), str(previous), "--fail-on", "breaking"]) == 0
    assert capsys.readouterr().out.startswith("no breaking change by Buf's rules (FILE)")

    (tmp_path / "bad.yaml").write_text("version: v1\nbreaking:\n  use: [WIRES]\n")
    broken = write(tmp_path / "broken", {"shop/v1/order.proto": ORDER_V2.replace("int64 quantity = 2;", "int65 quantity = 2;"),
                                         "shop/v1/money.proto": MONEY})
    for argv, words in [([str(previous), str(current), "--config", str(tmp_path / "bad.yaml")], "'WIRES' is not a breaking rule"),
                        ([str(previous), str(broken)], 'invalid PROTOBUF schema: shop/v1/order.proto:10:3: "int65" is not defined.'),
                        ([str(previous), str(current), "--type", "avro"], "folders are compared by Buf's breaking rules"),
                        ([str(previous / "shop/v1/order.proto"), str(current / "shop/v1/order.proto"), "--config", "buf.yaml"],
                         "--config (a buf.yaml) is for two folders")]:
        assert main(["classify", *argv]) == 2
        assert words in capsys.readouterr().err
    assert main(["rules", "--buf", "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert {r["id"] for r in listed} == set(RULES) and next(r for r in listed if r["id"] == "FIELD_SAME_DEFAULT")["categories"] == {
        "v2": ["CSR", "FILE", "PACKAGE", "WIRE_JSON", "WIRE"]}


SCOPED = """syntax = "proto2";
package shop;

message Order {
  extensions 100 to 200;
  optional string id = 1 [default = "none", json_name = "orderId"];
  optional float ratio = 2 [default = 0.1];
  map<string, Line> lines = 3;
  message Line {
    optional int32 n = 1;
    message Note { optional string text = 1; }
  }
}

message Line2 { optional int64 n = 1; }

extend Order {
  optional bool gift = 100;
}
"""


def test_each_finding_is_named_and_placed_where_buf_places_it() -> None:
    file = "shop/order.proto"
    moved = SCOPED.replace("extend Order {\n  optional bool gift = 100;\n}\n", "").replace(
        "  extensions 100 to 200;\n", "  extensions 100 to 200;\n  extend Order {\n    optional bool gift = 100;\n  }\n")
    renamed = breaking({file: SCOPED}, {file: moved}, read_config("version: v1\nbreaking:\n  use: [FIELD_SAME_NAME]\n"))
    assert [(f.line, f.column, f.message) for f in renamed] == [  # an extension is known by its full name, moved into Order's scope
        (7, 19, 'Extension "100" with name "shop.Order.gift" on message "shop.Order" changed name from "shop.gift" to "shop.Order.gift".')]

    retyped = SCOPED.replace("map<string, Line> lines = 3;", "map<string, Line2> lines = 3;")
    assert found({file: SCOPED}, {file: retyped}, "version: v1\nbreaking:\n  use: [FIELD_SAME_TYPE]\n") == [
        ("FIELD_SAME_TYPE", file, 8, 3)]  # the map's value, where the map field is written (protoc writes no source for its entry)

    gone = SCOPED.replace("    message Note { optional string text = 1; }\n", "")
    assert found({file: SCOPED}, {file: gone}, "version: v1\nbreaking:\n  use: [PACKAGE]\n") == [
        ("PACKAGE_MESSAGE_NO_DELETE", file, 9, 3)]  # at the nearest message that is still there: Line

    changed = SCOPED.replace('[default = "none", json_name = "orderId"]', '[default = "",  json_name =  "order_id"]')
    placed = {f.rule: (f.line, f.column, f.message) for f in breaking(
        {file: SCOPED}, {file: changed}, read_config("version: v2\nbreaking:\n  use: [FIELD_SAME_DEFAULT, FIELD_SAME_JSON_NAME]\n"))}
    assert placed["FIELD_SAME_DEFAULT"] == (6, 27, 'Field "1" with name "id" on message "Order" changed default value from "none" to "".')
    assert placed["FIELD_SAME_JSON_NAME"][:2] == (6, 42)  # at the option's name, not its value
    as_double = SCOPED.replace("optional float ratio = 2 [default = 0.1];", "optional double ratio = 2 [default = 0.1];")
    assert found({file: SCOPED}, {file: as_double}, "version: v2\nbreaking:\n  use: [FIELD_SAME_DEFAULT]\n") == []  # 0.1 as float32 both


EDITION = """edition = "2023";
package shop;

import "google/protobuf/cpp_features.proto";

enum Status {
  STATUS_UNSPECIFIED = 0;
}

message Item {
  string sku = 1;
  bytes blob = 2 [ctype = STRING_PIECE];
}
"""


def test_features_are_judged_and_placed_where_the_element_sets_them() -> None:
    file = "shop/item.proto"
    closed = EDITION.replace("enum Status {\n", "enum Status {\n  option features.enum_type = CLOSED;\n")
    view = EDITION.replace("string sku = 1;", "string sku = 1 [features.(pb.cpp).string_type = VIEW, features.utf8_validation = NONE];")
    assert found({file: EDITION}, {file: closed}, "version: v1\nbreaking:\n  use: [ENUM_SAME_TYPE]\n") == [("ENUM_SAME_TYPE", file, 7, 3)]
    assert found({file: EDITION}, {file: view}, "version: v1\nbreaking:\n  use: [FIELD_SAME_CPP_STRING_TYPE, FIELD_SAME_UTF8_VALIDATION]\n") == [
        ("FIELD_SAME_CPP_STRING_TYPE", file, 11, 19), ("FIELD_SAME_UTF8_VALIDATION", file, 11, 57)]
    plain = EDITION.replace("[ctype = STRING_PIECE]", "")
    assert found({file: EDITION}, {file: plain}, "version: v1\nbreaking:\n  use: [FIELD_SAME_CPP_STRING_TYPE]\n") == []  # a piece is a string
    assert found({file: plain}, {file: EDITION}, "version: v1\nbreaking:\n  use: [FIELD_SAME_CPP_STRING_TYPE]\n") == [
        ("FIELD_SAME_CPP_STRING_TYPE", file, 12, 19)]
    checked = 'syntax = "proto3";\npackage shop;\n\nmessage Item {\n  string sku = 1;\n}\n'
    java = checked.replace("package shop;\n", "package shop;\noption java_string_check_utf8 = true;\n")
    assert found({"a.proto": checked}, {"a.proto": java}, "version: v1\nbreaking:\n  use: [FIELD_SAME_JAVA_UTF8_VALIDATION]\n") == []  # VERIFY both
    proto2 = checked.replace('"proto3"', '"proto2"').replace("  string sku", "  optional string sku")
    assert found({"a.proto": proto2}, {"a.proto": java.replace('"proto3"', '"proto2"').replace("  string sku", "  optional string sku")},
                 "version: v1\nbreaking:\n  use: [FIELD_SAME_JAVA_UTF8_VALIDATION]\n") == [("FIELD_SAME_JAVA_UTF8_VALIDATION", "a.proto", 3, 1)]


def test_the_previous_folder_is_laid_out_by_its_own_configuration_and_checks_not_run_are_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    previous = write(tmp_path / "prev", {f"root/{k}": v for k, v in PREVIOUS.items()})
    (previous / "buf.yaml").write_text("version: v1beta1\nbuild:\n  roots: [root]\n")
    current = write(tmp_path / "cur", PREVIOUS)
    assert main(["classify", str(previous), str(current), "--type", "protobuf"]) == 0  # the same files: nothing deleted
    assert capsys.readouterr().out.startswith("no breaking change")
    (previous / "buf.yaml").write_text("version: v2\nmodules:\n  - path: root\n    breaking:\n      use: [NOT_A_RULE]\nplugins:\n  - plugin: x\n")
    assert main(["classify", str(previous), str(current), "--type", "protobuf"]) == 0  # only where its modules are is read
    assert capsys.readouterr().out.startswith("no breaking change")
    for section in ("plugins:\n  - plugin: buf-plugin-suffix\n", "policies:\n  - policy: buf.policy.yaml\n"):
        (current / "buf.yaml").write_text("version: v2\nbreaking:\n  use: [FILE]\n" + section)
        assert main(["classify", str(previous), str(current), "--type", "protobuf"]) == 2
        assert "which ChangeOps does not run" in capsys.readouterr().err
    assert read_config("version: v2\nbreaking:\n  disable_builtin: true\n")[0].breaking.rules == frozenset()
