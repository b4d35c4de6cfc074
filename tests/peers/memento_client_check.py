"""memento-client (PyPI, 0.6.1) asks a served mirror's TimeGates for random datetimes.

Usage: memento_client_check.py TIMEGATE_STEM SEED COUNT FROM_UNIX UNTIL_UNIX URI...
For COUNT datetimes drawn with random.Random(SEED) between FROM and UNTIL, one URI each (in
turn), prints one JSON object a line: the URI, the datetime asked for, and the closest, first
and last memento the client found. The test that runs it knows which they must be.
"""
import json
import random
import sys
from datetime import datetime, timezone

from memento_client import MementoClient


def main():
    stem, seed, count, start, end = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    uris = sys.argv[6:]
    client = MementoClient(timegate_uri=stem, check_native_timegate=False)
    rng = random.Random(seed)
    for i in range(count):
        uri = uris[i % len(uris)]
        at = rng.randrange(start, end)
        # memento-client takes a naive datetime in UTC.
        dt = datetime.fromtimestamp(at, tz=timezone.utc).replace(tzinfo=None)
        info = client.get_memento_info(uri, dt)
        mementos = info.get("mementos", {})

        def first_uri(kind):
            m = mementos.get(kind) or {}
            u = m.get("uri") or [None]
            return u[0]

        print(json.dumps({
            "uri": uri,
            "at": at,
            "closest": first_uri("closest"),
            "first": first_uri("first"),
            "last": first_uri("last"),
        }), flush=True)


if __name__ == "__main__":
    main()
