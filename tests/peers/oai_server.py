#!/usr/bin/env python3
"""An OAI-PMH 2.0 repository for rsmirror's integration tests, built on pyoai 2.5.0.

The protocol side (argument validation, resumptionToken encoding, the XML envelope,
error codes) is pyoai's own `oaipmh.server.BatchingServer`; this file only supplies
the backend (an `oaipmh.interfaces.IBatchingOAI`) that reads the records from a JSON
file, and an HTTP front end.

Serve:
    oai_server.py --records FILE [--batch 100] [--fail-once-with-503 N] [--log FILE]
The first stdout line is `PORT <n>`; the repository answers at
http://127.0.0.1:<n>/oai until the process is killed.

Make a records file:
    oai_server.py --gen N --deleted M --out FILE

Records file: a JSON list of
    {"identifier": "...", "datestamp": "YYYY-MM-DDThh:mm:ssZ", "deleted": false,
     "sets": ["..."], "title": "...", "creator": "..."}
It is read again on every request, so a test may rewrite it between two harvests
(write it to a temporary name and rename it, so a request never reads half a file).
"""

import argparse
import datetime
import json
import os
import sys
import threading
import types
import urllib.parse
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

warnings.filterwarnings("ignore", category=DeprecationWarning)

# pyoai 2.5.0 decodes resumption tokens with `cgi.parse_qs`, which left the cgi module
# in Python 3.8; the cgi module itself is gone in Python 3.13. Give pyoai what it needs.
try:
    import cgi  # noqa: E402
except ImportError:  # Python >= 3.13
    cgi = types.ModuleType("cgi")
    sys.modules["cgi"] = cgi
cgi.parse_qs = urllib.parse.parse_qs

# pyoai's oaipmh.common imports pkg_resources (from setuptools) at import time, to put
# its own version in Identify's toolkit description. A virtualenv of Python >= 3.12 has
# no setuptools, and recent setuptools drop pkg_resources: stand in for the two calls.
try:
    import pkg_resources  # noqa: F401,E402
except ImportError:
    import importlib.metadata

    _pr = types.ModuleType("pkg_resources")

    class _Requirement:
        def __init__(self, name):
            self.name = name

        @staticmethod
        def parse(name):
            return _Requirement(name)

    class _WorkingSet:
        @staticmethod
        def find(req):
            try:
                return types.SimpleNamespace(version=importlib.metadata.version(req.name))
            except importlib.metadata.PackageNotFoundError:
                return None

    _pr.Requirement = _Requirement
    _pr.working_set = _WorkingSet()
    sys.modules["pkg_resources"] = _pr

from oaipmh import common, error, metadata, server  # noqa: E402

OAI_DC = (
    "oai_dc",
    "http://www.openarchives.org/OAI/2.0/oai_dc.xsd",
    "http://www.openarchives.org/OAI/2.0/oai_dc/",
)
GEN_START = datetime.datetime(2020, 1, 1, 0, 0, 0)


def parse_stamp(text):
    """A record's datestamp (YYYY-MM-DDThh:mm:ssZ) as the naive UTC datetime pyoai wants."""
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")


class JsonRepository:
    """The IBatchingOAI backend: every call reads the records file again."""

    def __init__(self, records_path, base_url):
        self.records_path = records_path
        self.base_url = base_url

    def _records(self):
        with open(self.records_path, encoding="utf-8") as f:
            raw = json.load(f)
        out = []
        for r in raw:
            out.append(
                {
                    "identifier": r["identifier"],
                    "datestamp": parse_stamp(r["datestamp"]),
                    "deleted": bool(r.get("deleted", False)),
                    "sets": list(r.get("sets", [])),
                    "title": r.get("title", ""),
                    "creator": r.get("creator", ""),
                }
            )
        # Stable order for paging: oldest first, then by identifier.
        out.sort(key=lambda r: (r["datestamp"], r["identifier"]))
        return out

    @staticmethod
    def _header(r):
        return common.Header(None, r["identifier"], r["datestamp"], r["sets"], r["deleted"])

    @staticmethod
    def _metadata(r):
        if r["deleted"]:
            return None
        return common.Metadata(
            None,
            {
                "title": [r["title"]] if r["title"] else [],
                "creator": [r["creator"]] if r["creator"] else [],
                "identifier": [r["identifier"]],
                "date": [r["datestamp"].strftime("%Y-%m-%dT%H:%M:%SZ")],
            },
        )

    @staticmethod
    def _check_prefix(prefix):
        if prefix != "oai_dc":
            raise error.CannotDisseminateFormatError("Unknown metadata format: %s" % prefix)

    def _select(self, metadataPrefix, set=None, from_=None, until=None):
        self._check_prefix(metadataPrefix)
        records = self._records()
        if set is not None:
            if not any(r["sets"] for r in records):
                raise error.NoSetHierarchyError("This repository does not support sets.")
            # setSpec is hierarchical: a record in "a:b" is also in "a".
            records = [
                r for r in records if any(s == set or s.startswith(set + ":") for s in r["sets"])
            ]
        if from_ is not None:
            records = [r for r in records if r["datestamp"] >= from_]
        if until is not None:
            records = [r for r in records if r["datestamp"] <= until]
        return records

    # IBatchingOAI -----------------------------------------------------------------

    def identify(self):
        records = self._records()
        earliest = min((r["datestamp"] for r in records), default=GEN_START)
        return common.Identify(
            repositoryName="rsmirror test repository (pyoai)",
            baseURL=self.base_url,
            protocolVersion="2.0",
            adminEmails=["nobody@example.org"],
            earliestDatestamp=earliest,
            deletedRecord="persistent",
            granularity="YYYY-MM-DDThh:mm:ssZ",
            compression=["identity"],
        )

    def listMetadataFormats(self, identifier=None):
        if identifier is not None and not any(
            r["identifier"] == identifier for r in self._records()
        ):
            raise error.IdDoesNotExistError("No such identifier: %s" % identifier)
        return [OAI_DC]

    def listSets(self, cursor=0, batch_size=10):
        specs = sorted({s for r in self._records() for s in r["sets"]})
        if not specs:
            raise error.NoSetHierarchyError("This repository does not support sets.")
        return [(s, "Set %s" % s, None) for s in specs][cursor : cursor + batch_size]

    def getRecord(self, metadataPrefix, identifier):
        self._check_prefix(metadataPrefix)
        for r in self._records():
            if r["identifier"] == identifier:
                return self._header(r), self._metadata(r), None
        raise error.IdDoesNotExistError("No such identifier: %s" % identifier)

    def listIdentifiers(self, metadataPrefix, set=None, from_=None, until=None, cursor=0,
                        batch_size=10):
        records = self._select(metadataPrefix, set, from_, until)[cursor : cursor + batch_size]
        return [self._header(r) for r in records]

    def listRecords(self, metadataPrefix, set=None, from_=None, until=None, cursor=0,
                    batch_size=10):
        records = self._select(metadataPrefix, set, from_, until)[cursor : cursor + batch_size]
        return [(self._header(r), self._metadata(r), None) for r in records]


def make_handler(oai, options):
    lock = threading.Lock()
    state = {"list_records": 0, "failed": False}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # keep stderr quiet
            pass

        def _log(self, query):
            if options.log:
                with lock, open(options.log, "a", encoding="utf-8") as f:
                    f.write(query + "\n")

        def _send(self, status, body, headers=()):
            self.send_response(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _answer(self, query):
            self._log(query)
            params = urllib.parse.parse_qs(query, keep_blank_values=True)
            if params.get("verb") == ["ListRecords"] and options.fail_once_with_503:
                with lock:
                    state["list_records"] += 1
                    fail = (
                        not state["failed"]
                        and state["list_records"] == options.fail_once_with_503
                    )
                    if fail:
                        state["failed"] = True
                if fail:
                    self._send(
                        503,
                        b"Service unavailable, try again\n",
                        [("Retry-After", "1"), ("Content-Type", "text/plain")],
                    )
                    return
            # pyoai takes one value per argument; a repeated argument is a badArgument.
            repeated = sorted(k for k, v in params.items() if len(v) > 1)
            kw = {k: v[0] for k, v in params.items()}
            try:
                if repeated:
                    err = error.BadArgumentError("Repeated argument: %s" % ", ".join(repeated))
                    body = oai.handleException({}, (type(err), err, None))
                else:
                    body = oai.handleRequest(kw)
            except Exception as exc:  # pyoai re-raises what is not an OAI error
                self._send(500, ("%s\n" % exc).encode(), [("Content-Type", "text/plain")])
                return
            self._send(200, body, [("Content-Type", "text/xml; charset=utf-8")])

        def _path_ok(self):
            if urllib.parse.urlsplit(self.path).path != "/oai":
                self._send(404, b"not found\n", [("Content-Type", "text/plain")])
                return False
            return True

        def do_GET(self):
            if self._path_ok():
                self._answer(urllib.parse.urlsplit(self.path).query)

        do_HEAD = do_GET

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode("utf-8", "replace")
            if self._path_ok():
                self._answer(body)

    return Handler


def generate(n, deleted, out):
    records = []
    for i in range(n):
        # M deleted records spread evenly over the N.
        is_deleted = deleted > 0 and (i + 1) * deleted // n > i * deleted // n
        records.append(
            {
                "identifier": "oai:rsmirror.test:rec-%06d" % (i + 1),
                "datestamp": (GEN_START + datetime.timedelta(minutes=i)).strftime(
                    "%Y-%m-%dT%H:%M:%SZ"
                ),
                "deleted": is_deleted,
                "sets": ["even" if i % 2 == 0 else "odd"],
                "title": "Record %d" % (i + 1),
                "creator": "Creator %d" % (i % 7),
            }
        )
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(records, f, indent=1)
        f.write("\n")
    os.replace(tmp, out)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--records", help="JSON records file, read on every request")
    p.add_argument("--batch", type=int, default=100, help="records per page (default 100)")
    p.add_argument("--fail-once-with-503", type=int, default=0, metavar="N",
                   help="the Nth ListRecords request answers 503, Retry-After: 1 (once)")
    p.add_argument("--log", help="append each request's query string to this file")
    p.add_argument("--gen", type=int, metavar="N", help="write a records file of N records")
    p.add_argument("--deleted", type=int, default=0, metavar="M", help="with --gen: M deleted")
    p.add_argument("--out", help="with --gen: the file to write")
    options = p.parse_args()

    if options.gen is not None:
        if not options.out:
            p.error("--gen needs --out")
        if not 0 <= options.deleted <= options.gen:
            p.error("--deleted must be between 0 and --gen")
        generate(options.gen, options.deleted, options.out)
        return
    if not options.records:
        p.error("--records FILE is required to serve")

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), None)
    httpd.daemon_threads = True
    port = httpd.server_address[1]
    base_url = "http://127.0.0.1:%d/oai" % port
    registry = metadata.MetadataRegistry()
    registry.registerWriter("oai_dc", server.oai_dc_writer)
    oai = server.BatchingServer(
        JsonRepository(options.records, base_url),
        metadata_registry=registry,
        resumption_batch_size=options.batch,
    )
    httpd.RequestHandlerClass = make_handler(oai, options)
    print("PORT %d" % port, flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
