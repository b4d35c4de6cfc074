"""An HTTP/2 server in cleartext (h2c, prior knowledge) that misbehaves, for tests/it/hostile_h2.rs.

    python3 h2_server.py ROOT MODE LOG

Serves the files under ROOT. Prints its port on the first line of stdout. Writes one line per
request to LOG: connection number, stream id, start and end times (seconds), path, what was done.

MODE:
  hostile     /res/000003: headers and half the body, then RST_STREAM (INTERNAL_ERROR);
              /res/000007: a body 100 bytes longer than its content-length;
              every other file as it is.
  goaway      every connection serves 10 requests, then a GOAWAY naming the 10th stream (the
              10 are answered, those after are not) and the connection closes.
  settings    a flood of 2,000 SETTINGS frames before each response.
  onestream   SETTINGS_MAX_CONCURRENT_STREAMS 1, every response 20 ms late; a stream opened
              beyond it is refused (RST_STREAM REFUSED_STREAM, RFC 9113 §5.1.2) and logged as
              "refused" (a client may send more before it has read the SETTINGS).
  ratelimit   /res/000005: the first time, 429 with Retry-After: 2 (logged "429"); every
              response 30 ms late.
  push        /res/000005: a flood of 1,000 PUSH_PROMISE frames before its response (the
              client said SETTINGS_ENABLE_PUSH 0, so the first is already a protocol error);
              every other file as it is.
"""

import asyncio
import os
import sys
import time

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
import struct

ROOT, MODE, LOG = sys.argv[1], sys.argv[2], sys.argv[3]
log = open(LOG, "a", buffering=1)
connections = 0
limited = set()


async def respond(conn, writer, stream_id, path, number, active):
    try:
        await answer(conn, writer, stream_id, path, number)
    finally:
        active.discard(stream_id)


async def answer(conn, writer, stream_id, path, number):
    start = time.time()
    what = "ok"
    file = os.path.join(ROOT, path.lstrip("/"))
    if not os.path.isfile(file):
        conn.send_headers(stream_id, [(":status", "404"), ("content-length", "0")], end_stream=True)
        writer.write(conn.data_to_send())
        return
    body = open(file, "rb").read()
    if MODE == "onestream":
        await asyncio.sleep(0.02)
    if MODE == "ratelimit":
        await asyncio.sleep(0.03)
        if path == "/res/000005" and path not in limited:
            limited.add(path)
            conn.send_headers(stream_id, [(":status", "429"), ("retry-after", "2"),
                                          ("content-length", "0")], end_stream=True)
            writer.write(conn.data_to_send())
            await writer.drain()
            log.write(f"{number} {stream_id} {start:.4f} {time.time():.4f} {path} 429\n")
            return
    if MODE == "push" and path == "/res/000005":
        block = conn.encoder.encode(
            [(":method", "GET"), (":scheme", "http"), (":path", "/pushed"), (":authority", "x")]
        )
        for i in range(1000):
            # PUSH_PROMISE (type 5, END_HEADERS), on the request's stream, promising stream 2i+2.
            payload = struct.pack(">I", 2 * i + 2) + block
            frame = struct.pack(">I", len(payload))[1:] + bytes([5, 4]) + struct.pack(">I", stream_id)
            writer.write(frame + payload)
        await writer.drain()
        what = "push"
    if MODE == "settings":
        for _ in range(2000):
            conn.update_settings({h2.settings.SettingCodes.HEADER_TABLE_SIZE: 4096})
        writer.write(conn.data_to_send())
    headers = [(":status", "200"), ("content-length", str(len(body)))]
    if MODE == "hostile" and path == "/res/000003":
        conn.send_headers(stream_id, headers)
        conn.send_data(stream_id, body[: len(body) // 2])
        writer.write(conn.data_to_send())
        await writer.drain()
        conn.reset_stream(stream_id, error_code=h2.errors.ErrorCodes.INTERNAL_ERROR)
        what = "reset"
    elif MODE == "hostile" and path == "/res/000007":
        conn.send_headers(stream_id, headers)
        conn.send_data(stream_id, body + b"x" * 100, end_stream=True)
        what = "long"
    else:
        conn.send_headers(stream_id, headers)
        conn.send_data(stream_id, body, end_stream=True)
    writer.write(conn.data_to_send())
    await writer.drain()
    log.write(f"{number} {stream_id} {start:.4f} {time.time():.4f} {path} {what}\n")


async def serve(reader, writer):
    global connections
    connections += 1
    number = connections
    config = h2.config.H2Configuration(
        client_side=False, validate_outbound_headers=False, normalize_outbound_headers=False
    )
    conn = h2.connection.H2Connection(config=config)
    conn.initiate_connection()
    settings = conn.data_to_send()
    if MODE == "onestream":
        # SETTINGS_MAX_CONCURRENT_STREAMS (0x3) = 1, refused here rather than by h2 (which
        # would end the whole connection).
        settings = struct.pack(">I", 6)[1:] + bytes([4, 0]) + struct.pack(">IHI", 0, 3, 1)
    writer.write(settings)
    active = set()
    served = 0
    tasks = []
    log_refused = lambda stream_id: log.write(
        f"{number} {stream_id} {time.time():.4f} {time.time():.4f} - refused\n")
    try:
        while True:
            try:
                data = await reader.read(65536)
            except (ConnectionError, OSError):
                break
            if not data:
                break
            try:
                events = conn.receive_data(data)
            except Exception:
                break
            for event in events:
                if isinstance(event, h2.events.RequestReceived):
                    path = dict((k.decode() if isinstance(k, bytes) else k,
                                 v.decode() if isinstance(v, bytes) else v)
                                for k, v in event.headers)[":path"]
                    served += 1
                    if MODE == "goaway" and served > 10:
                        # A graceful GOAWAY (RFC 9113 §6.8): the ten streams it names as
                        # processed are answered, the later ones are not, and the connection
                        # closes. Written as a frame of its own, so that h2 still sends the
                        # answers.
                        last = struct.pack(">II", event.stream_id - 2, 0)
                        writer.write(struct.pack(">I", 8)[1:] + bytes([7, 0]) + struct.pack(">I", 0) + last)
                        writer.write(conn.data_to_send())
                        await writer.drain()
                        await asyncio.gather(*tasks, return_exceptions=True)
                        writer.write(conn.data_to_send())
                        await writer.drain()
                        writer.close()
                        return
                    if MODE == "onestream":
                        if active:
                            conn.reset_stream(event.stream_id, h2.errors.ErrorCodes.REFUSED_STREAM)
                            log_refused(event.stream_id)
                            continue
                        active.add(event.stream_id)
                    tasks.append(asyncio.ensure_future(
                        respond(conn, writer, event.stream_id, path, number, active)))
            writer.write(conn.data_to_send())
            await writer.drain()
    finally:
        await asyncio.gather(*tasks, return_exceptions=True)
        try:
            writer.close()
        except Exception:
            pass


async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
