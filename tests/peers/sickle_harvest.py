#!/usr/bin/env python3
"""Harvest an OAI-PMH repository with Sickle 0.7.0 and print one JSON line per record.

    sickle_harvest.py BASE_URL [--prefix oai_dc] [--from STAMP] [--until STAMP] [--set SPEC]
                      [--list-identifiers] [--max-retries 3]

Each line is {"identifier": ..., "datestamp": ..., "deleted": ...}, in the order the
repository sent them. ListRecords is harvested with ignore_deleted=False, so deleted
records are printed too; --list-identifiers harvests ListIdentifiers instead (headers
only: no metadata to parse). Sickle follows resumptionTokens and, with --max-retries,
honours a 503's Retry-After. The last line on stderr counts what was printed. An OAI
error noRecordsMatch is an empty harvest (exit 0); any other failure exits 1.
"""

import argparse
import json
import sys

from sickle import Sickle
from sickle.oaiexceptions import NoRecordsMatch


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("base_url")
    p.add_argument("--prefix", default="oai_dc", help="metadataPrefix (default oai_dc)")
    p.add_argument("--from", dest="from_", metavar="STAMP", help="from= (selective harvest)")
    p.add_argument("--until", metavar="STAMP")
    p.add_argument("--set", metavar="SPEC")
    p.add_argument("--list-identifiers", action="store_true",
                   help="ListIdentifiers (headers only) instead of ListRecords")
    p.add_argument("--max-retries", type=int, default=3,
                   help="retries of a 503, waiting its Retry-After (default 3)")
    p.add_argument("--timeout", type=float, default=60.0, help="per-request timeout, seconds")
    a = p.parse_args()

    sickle = Sickle(a.base_url, max_retries=a.max_retries, default_retry_after=1,
                    timeout=a.timeout)
    kwargs = {"metadataPrefix": a.prefix}
    if a.from_:
        kwargs["from"] = a.from_
    if a.until:
        kwargs["until"] = a.until
    if a.set:
        kwargs["set"] = a.set

    out = sys.stdout
    count = 0
    try:
        if a.list_identifiers:
            for header in sickle.ListIdentifiers(ignore_deleted=False, **kwargs):
                out.write(json.dumps({"identifier": header.identifier,
                                      "datestamp": header.datestamp,
                                      "deleted": bool(header.deleted)}) + "\n")
                count += 1
        else:
            for record in sickle.ListRecords(ignore_deleted=False, **kwargs):
                out.write(json.dumps({"identifier": record.header.identifier,
                                      "datestamp": record.header.datestamp,
                                      "deleted": bool(record.deleted)}) + "\n")
                count += 1
    except NoRecordsMatch:
        pass
    out.flush()
    print("harvested %d" % count, file=sys.stderr)


if __name__ == "__main__":
    main()
