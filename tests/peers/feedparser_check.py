#!/usr/bin/env python3
"""Read feeds with feedparser (PyPI), as a feed reader polls them: each URL fetched, its
entries read, then fetched again with the ETag (and Last-Modified) the first answer gave.

    feedparser_check.py URL...

One JSON object a line: {"url", "status", "bozo", "version", "ids": [entry ids], "etag",
"modified", "again": status of the conditional request, "again_by_date": status of a request
with If-Modified-Since alone}.
"""

import json
import sys

import feedparser


def main(urls):
    for url in urls:
        first = feedparser.parse(url)
        again = feedparser.parse(url, etag=first.get("etag"))
        by_date = feedparser.parse(url, modified=first.get("modified"))
        print(
            json.dumps(
                {
                    "url": url,
                    "status": first.get("status"),
                    "bozo": bool(first.bozo),
                    "bozo_exception": str(first.get("bozo_exception", "")),
                    "version": first.version,
                    "ids": [e.get("id") for e in first.entries],
                    "title": first.feed.get("title"),
                    "etag": first.get("etag"),
                    "modified": first.get("modified"),
                    "again": again.get("status"),
                    "again_entries": len(again.entries),
                    "again_by_date": by_date.get("status"),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv[1:])
