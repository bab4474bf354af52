"""Small documents for the file search tests, a PDF among them (written here, byte by byte:
one page, one font, the text in lines)."""

from __future__ import annotations


def pdf_with_text(lines: list[str]) -> bytes:
    """A one-page PDF whose page shows `lines` (ASCII) in Helvetica."""
    shown = "".join(f"({line.replace('(', '[').replace(')', ']')}) Tj T* " for line in lines)
    stream = f"BT /F1 12 Tf 14 TL 72 720 Td {shown}ET".encode()
    return _pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
            b"/Resources << /Font << /F1 5 0 R >> >> >>",
            _stream(stream),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        ]
    )


def pdf_with_font_map(shown_bytes: int, characters_per_byte: int = 256) -> bytes:
    """A one-page PDF that shows `shown_bytes` bytes in a font whose ToUnicode map turns each
    one into `characters_per_byte` characters: a small file whose text is enormous."""
    target = "0061" * characters_per_byte  # "a", over and over
    cmap = (
        "/CIDInit /ProcSet findresource begin 12 dict begin begincmap "
        "/CMapName /Adobe-Identity-UCS def /CMapType 2 def "
        "1 begincodespacerange <00> <FF> endcodespacerange "
        f"1 beginbfchar <41> <{target}> endbfchar "
        "endcmap CMapName currentdict /CMap defineresource pop end end"
    ).encode()
    stream = b"BT /F1 12 Tf 72 720 Td (" + b"A" * shown_bytes + b") Tj ET"
    return _pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
            b"/Resources << /Font << /F1 5 0 R >> >> >>",
            _stream(stream),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 6 0 R >>",
            _stream(cmap),
        ]
    )


def _stream(data: bytes) -> bytes:
    return b"<< /Length %d >>\nstream\n%s\nendstream" % (len(data), data)


def _pdf(objects: list[bytes]) -> bytes:
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


GARDENING = """# Growing tomatoes

Tomatoes need six to eight hours of direct sun a day. Water them deeply twice a week, at the
base of the plant, and stake them once they are a foot tall so the fruit stays off the soil.
"""

BAKING = """<html><head><title>Bread</title><style>p {color: red}</style></head>
<body><h1>Sourdough bread</h1><p>A sourdough starter is flour and water fermented by wild yeast.
Feed the starter daily; bake when it doubles within six hours.</p><script>var x = 1;</script></body></html>
"""

ASTRONOMY_LINES = [
    "The Andromeda galaxy is the nearest large galaxy to the Milky Way.",
    "It lies about two and a half million light years away from Earth.",
]
