#!/usr/bin/env python3
"""Validate feeds with the W3C Feed Validator (github.com/w3c/feedvalidator, commit 43dabeb2,
its `src/feedvalidator` package vendored beside this script with its LICENSE; it imports lxml,
html5lib and rdflib).

    validate.py URL...              each feed as the validator fetches it over HTTP
    validate.py --base URL DIR      every .atom and .opml file under DIR, each validated as the
                                    document at URL/<its path under DIR> (so that rel="self"
                                    is checked against where the file is published)

One JSON object a line: {"document", "errors": [...], "warnings": [...]}, each message as
"line L, column C: text (EventClass)". Every event the validator logs is counted, before any
compatibility filter. Exit 1 when any document has an error.
"""

import json
import os
import sys

# feedvalidator.validateURL uses urllib.request and urllib.error without importing them (its
# web front end imports them first): so does this script.
import urllib.error  # noqa: F401
import urllib.request  # noqa: F401

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import feedvalidator  # noqa: E402
from feedvalidator import logging as fvlog  # noqa: E402
from feedvalidator.formatter.text_plain import Formatter  # noqa: E402


def said(events, kind):
    out = []
    for e in events:
        if isinstance(e, kind):
            text = Formatter([e])
            out.append("%s (%s)" % (text[0] if text else "", type(e).__name__))
    return out


def check(document, run):
    try:
        events = run()["loggedEvents"]
    except fvlog.ValidationFailure as vf:
        events = [vf.event]
    result = {
        "document": document,
        "errors": said(events, fvlog.Error),
        "warnings": said(events, fvlog.Warning),
    }
    print(json.dumps(result), flush=True)
    return not result["errors"]


def main(argv):
    ok = True
    if argv[:1] == ["--base"]:
        base, folder = argv[1].rstrip("/"), argv[2]
        for root, _, files in os.walk(folder):
            for name in sorted(files):
                if not name.endswith((".atom", ".opml")):
                    continue
                path = os.path.join(root, name)
                rel = os.path.relpath(path, folder).replace(os.sep, "/")
                with open(path, "rb") as f:
                    data = f.read()
                url = base + "/" + rel
                ok &= check(
                    url,
                    lambda: feedvalidator.validateString(
                        data, firstOccurrenceOnly=0, base=url
                    ),
                )
    else:
        for url in argv:
            ok &= check(url, lambda: feedvalidator.validateURL(url, firstOccurrenceOnly=0))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
