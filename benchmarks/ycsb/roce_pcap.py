#!/usr/bin/env python3
"""One line per RoCE v2 packet of a pcap file (rxe_table.sh --capture writes them).

usage: benchmarks/ycsb/roce_pcap.py CAPTURE.pcap [--nak SYNDROME [--context N]]

Each line: capture time, source>destination IPv4 address, destination QP, the RC opcode,
the PSN, the AckReq bit, the payload length (UDP length less the headers, ICRC and pad),
the RETH (DMA length and virtual address) of FIRST/ONLY writes, the AETH (syndrome, MSN) of
acknowledgements. AETH syndromes: 0x1f ACK, 0x60 NAK PSN sequence error, 0x61 NAK invalid
request, 0x62 NAK remote access error, 0x2x RNR NAK.

--nak 0x61 prints, for each acknowledgement with that syndrome, the N packets (default 80)
exchanged between the same two hosts up to it.

A torn record (a record length no capture of snap length 96 can have, as when two writers
shared one file) makes the reader scan forward to the next plausible record header; it says
on stderr how many bytes it skipped.
"""
import argparse
import struct
import sys

OPCODES = {
    0x00: "SEND_FIRST", 0x01: "SEND_MIDDLE", 0x02: "SEND_LAST", 0x03: "SEND_LAST_IMM",
    0x04: "SEND_ONLY", 0x05: "SEND_ONLY_IMM", 0x06: "WRITE_FIRST", 0x07: "WRITE_MIDDLE",
    0x08: "WRITE_LAST", 0x09: "WRITE_LAST_IMM", 0x0a: "WRITE_ONLY", 0x0b: "WRITE_ONLY_IMM",
    0x0c: "READ_REQUEST", 0x0d: "READ_RESPONSE_FIRST", 0x0e: "READ_RESPONSE_MIDDLE",
    0x0f: "READ_RESPONSE_LAST", 0x10: "READ_RESPONSE_ONLY", 0x11: "ACK",
}
# Bytes of extended headers after the 12-byte BTH, by opcode (RETH 16, ImmDt 4, AETH 4).
EXTENDED = {0x03: 4, 0x05: 4, 0x06: 16, 0x09: 4, 0x0a: 16, 0x0b: 20, 0x0c: 16, 0x0d: 4,
            0x0f: 4, 0x10: 4, 0x11: 4}
ICRC = 4
MAX_SNAP = 256


def records(path):
    data = open(path, "rb").read()
    if len(data) < 24:
        return
    endian = "<" if data[:4] == b"\xd4\xc3\xb2\xa1" else ">"
    pos, last_ts, skipped = 24, None, 0
    while pos + 16 <= len(data):
        ts, us, incl, orig = struct.unpack_from(endian + "IIII", data, pos)
        plausible = (42 <= incl <= MAX_SNAP and incl <= orig <= 9216 and us < 1_000_000
                     and (last_ts is None or abs(ts - last_ts) < 3600))
        if not plausible:
            pos += 1
            skipped += 1
            continue
        frame = data[pos + 16:pos + 16 + incl]
        pos += 16 + incl
        if len(frame) < incl:
            break
        last_ts = ts
        yield ts + us / 1e6, frame
    if skipped:
        print(f"roce_pcap: skipped {skipped} bytes of torn records", file=sys.stderr)


def decode(frame):
    if frame[12:14] != b"\x08\x00":
        return None  # not IPv4
    ihl = (frame[14] & 0x0F) * 4
    src = ".".join(str(b) for b in frame[26:30])
    dst = ".".join(str(b) for b in frame[30:34])
    udp = 14 + ihl
    udp_len = struct.unpack(">H", frame[udp + 4:udp + 6])[0]
    bth = udp + 8
    if len(frame) < bth + 12:
        return None
    op = frame[bth]
    pad = (frame[bth + 1] >> 4) & 3
    dest_qp = int.from_bytes(frame[bth + 5:bth + 8], "big")
    ack_req = frame[bth + 8] >> 7
    psn = int.from_bytes(frame[bth + 9:bth + 12], "big")
    payload = udp_len - 8 - 12 - EXTENDED.get(op, 0) - ICRC - pad
    extra = ""
    if op in (0x06, 0x0a, 0x0b) and len(frame) >= bth + 28:
        va, _rkey, dma_len = struct.unpack(">QII", frame[bth + 12:bth + 28])
        extra = f" reth_len={dma_len} va={va:#x}"
    syndrome = None
    if op == 0x11 and len(frame) >= bth + 16:
        syndrome = frame[bth + 12]
        msn = int.from_bytes(frame[bth + 13:bth + 16], "big")
        extra = f" syn={syndrome:#04x} msn={msn}"
    line = (f"{src}>{dst} qp={dest_qp:#x} {OPCODES.get(op, hex(op))} psn={psn:#08x} "
            f"a={ack_req} len={payload} pad={pad}{extra}")
    return (src, dst, syndrome, line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("capture")
    ap.add_argument("--nak", help="AETH syndrome, e.g. 0x61")
    ap.add_argument("--context", type=int, default=80)
    args = ap.parse_args()
    lines = []
    for ts, frame in records(args.capture):
        d = decode(frame)
        if d is not None:
            lines.append((ts, d))
    if args.nak is None:
        for ts, d in lines:
            print(f"{ts:.6f} {d[3]}")
        return
    want = int(args.nak, 0)
    for i, (ts, d) in enumerate(lines):
        if d[2] != want:
            continue
        hosts = {d[0], d[1]}
        print(f"=== {ts:.6f} {d[3]}")
        near = [(t, x) for t, x in lines[max(0, i - 20 * args.context):i + 1]
                if {x[0], x[1]} == hosts]
        for t, x in near[-args.context:]:
            print(f"{t:.6f} {x[3]}")


if __name__ == "__main__":
    main()
