"""Protobuf schemas: protocs descriptors, the model the classifier walks, and the registrys differences."""
