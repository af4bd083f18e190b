"""Buf's breaking-change rules for Protobuf: folders of ``.proto`` files compiled by protoc, paired element by element."""
