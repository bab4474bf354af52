"""The data converter (`worker/data_converter.py`): pydantic payloads, made cheaply, byte for
byte what temporalio's pydantic converter writes and reads, sealed with a key ring."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from temporalio.contrib.pydantic import PydanticPayloadConverter

from models.workflow_io import ResponseEnded
from sealing.keyring import KeyRing, new_master_key
from sealing.payload_codec import ENCODING
from worker.data_converter import PYDANTIC_PAYLOADS, PydanticPayloads, data_converter

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
ended = st.builds(ResponseEnded, id=st.text(min_size=1, max_size=40), status=st.sampled_from(["completed", "failed"]))


@settings(max_examples=200)
@given(value=json_values | ended)
def test_the_shared_converter_writes_and_reads_what_temporalios_pydantic_converter_does(value: Any):
    ours, theirs = PydanticPayloads(), PydanticPayloadConverter()
    written = ours.to_payloads([value])
    assert written == theirs.to_payloads([value])
    hint = [type(value)] if isinstance(value, ResponseEnded) else None
    assert ours.from_payloads(written, hint) == theirs.from_payloads(written, hint) == [value]


def test_every_converter_the_worker_makes_shares_one_set_of_parts():
    """The worker makes a data converter per activation (a dataclass copy, which makes its
    payload converter from the class): each shares the first one's encoding converters, and
    with them pydantic's cache of type adapters."""
    assert dataclasses.replace(PYDANTIC_PAYLOADS).payload_converter_class is PydanticPayloads
    first, second = PydanticPayloads(), PydanticPayloads()
    assert first is not second
    assert first.converters.keys() == PydanticPayloadConverter().converters.keys()
    for encoding, part in first.converters.items():
        assert second.converters[encoding] is part


def test_with_a_key_ring_payloads_are_sealed_and_open_again():
    converter = data_converter(KeyRing.parse(new_master_key()))
    value = ResponseEnded(id="resp_1", status="completed")
    sealed = asyncio.run(converter.encode([value]))
    assert [payload.metadata["encoding"] for payload in sealed] == [ENCODING]
    assert b"resp_1" not in sealed[0].data
    assert asyncio.run(converter.decode(sealed, [ResponseEnded])) == [value]
    assert data_converter(None) is PYDANTIC_PAYLOADS
