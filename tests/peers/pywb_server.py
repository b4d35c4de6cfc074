"""pywb 2.10.0 (PyPI) as a Memento server for the tests: a collection `c1` made in DIR from the
WARC files given, served on 127.0.0.1 (port 0) with its TimeGates and TimeMaps (RFC 7089).
Prints `PORT <n>` first.  Usage: pywb_server.py DIR WARC...
"""
from gevent import monkey

monkey.patch_all()

import os  # noqa: E402
import sys  # noqa: E402

from gevent.pywsgi import WSGIServer  # noqa: E402
from pywb.apps.frontendapp import FrontEndApp  # noqa: E402
from pywb.manager.manager import CollectionsManager  # noqa: E402


def main():
    root, warcs = sys.argv[1], [os.path.abspath(w) for w in sys.argv[2:]]
    os.chdir(root)
    # pywb's defaults, written out: without the file its manager says so on stdout.
    with open("config.yaml", "w") as f:
        f.write("collections_root: collections\n")
    manager = CollectionsManager("c1", must_exist=False)
    manager.add_collection()
    manager.add_archives(warcs)
    app = FrontEndApp()
    server = WSGIServer(("127.0.0.1", 0), app, log=None)
    server.start()
    print("PORT", server.server_port, flush=True)
    # The test reads the first line and closes the pipe: what pywb prints later (it does, per
    # request) must not meet a broken pipe and turn into a 500.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    sys.stdout = open(os.devnull, "w")
    server.serve_forever()


if __name__ == "__main__":
    main()
