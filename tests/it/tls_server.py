"""A static https server for tests/it/https.rs: serves ROOT on 127.0.0.1 (a free port, printed
on the first line) with testdata/tls's certificate, HTTP/1.1 with keep-alive, Last-Modified and
If-Modified-Since as http.server does them. In .xml documents the fixtures' placeholder origin
http://sample.example.org becomes this server's https origin.

    python3 tls_server.py ROOT CERT KEY
"""

import http.server
import os
import ssl
import sys

ROOT, CERT, KEY = sys.argv[1:4]
PLACEHOLDER = b"http://sample.example.org"


class Handler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, directory=ROOT, **kwargs)

    def log_message(self, *args):
        pass

    def do_GET(self):
        path = os.path.join(ROOT, self.path.split("?")[0].lstrip("/"))
        if not (path.endswith(".xml") and os.path.isfile(path)):
            return super().do_GET()
        with open(path, "rb") as f:
            body = f.read().replace(PLACEHOLDER, ORIGIN)
        self.send_response(200)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(CERT, KEY)
server.socket = context.wrap_socket(server.socket, server_side=True)
ORIGIN = f"https://127.0.0.1:{server.server_address[1]}".encode()
print(server.server_address[1], flush=True)
server.serve_forever()
