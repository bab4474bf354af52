"""The data converter of every Temporal client and worker here: pydantic payloads
(`PydanticPayloads`), sealed by the payload codec when there is a key ring
(`sealing/payload_codec.py`), failure messages and stack traces included."""

from __future__ import annotations

import dataclasses

from temporalio.contrib.pydantic import PydanticPayloadConverter, pydantic_data_converter
from temporalio.converter import CompositePayloadConverter, DataConverter, DefaultFailureConverterWithEncodedAttributes

from sealing.keyring import KeyRing
from sealing.payload_codec import EncryptedPayloads


class PydanticPayloads(PydanticPayloadConverter):
    """temporalio's pydantic payload converter, its parts made once per process and shared by
    every instance: the same payloads, at a fraction of the cost of making one.

    Temporal's worker makes a payload converter for every workflow activation it decodes and
    every completion it encodes (its command-aware data converter is a dataclass, which makes
    one from the class when it is made), and converts nothing with it. The pydantic converter
    builds a schema serializer and an empty type-adapter cache each time it is made: about
    1.5 converters per activation, four activations per response."""

    def __init__(self) -> None:
        CompositePayloadConverter.__init__(self, *_PARTS)


_PARTS = tuple(PydanticPayloadConverter().converters.values())
"""The encoding converters every `PydanticPayloads` shares (pydantic's type adapters are cached
in its JSON converter, so they are made once per type, too)."""

PYDANTIC_PAYLOADS = dataclasses.replace(pydantic_data_converter, payload_converter_class=PydanticPayloads)


def data_converter(ring: KeyRing | None, *, encrypt: bool = True) -> DataConverter:
    """Pydantic payloads; with a key ring, sealed by the codec, failure messages and stack
    traces included (they can quote user content)."""
    if ring is None:
        return PYDANTIC_PAYLOADS
    return dataclasses.replace(
        PYDANTIC_PAYLOADS,
        payload_codec=EncryptedPayloads(ring, encrypt=encrypt),
        failure_converter_class=(
            DefaultFailureConverterWithEncodedAttributes if encrypt else PYDANTIC_PAYLOADS.failure_converter_class
        ),
    )
