"""A WebSub hub (flask-websub 0.4.1, celery in eager mode) and a ResourceSync source, on one
127.0.0.1 port (0: any free one, printed first as `PORT <n>`), for tests/it/follow.rs.

    python websub_hub.py TREE_DIR HUB_DB [deny]

- `/hub`: flask-websub's hub endpoint (HUB_MIN_LEASE_SECONDS 60: a 10 s lease is granted 60 s;
  MAX_ATTEMPTS 3, BACKOFF_BASE 0: a failing callback is given up on at once).
- `/<path>`: the files of TREE_DIR, `http://sample.example.org` rewritten to this server's
  origin in XML documents (as the Rust test server does).
- `/notification/changelist`: the topic: the current `changelist.xml`, with the WebSub
  `Link` headers (rel="hub", rel="self") flask-websub requires.
- `POST /publish?alg=sha256`: the hub distributes the topic's content now, signed with `alg`.
- `POST /forge?kind=unsigned|forged`: the topic's content POSTed to every subscriber's callback
  without a signature, or with a wrong one (what an attacker who learnt a callback could do).
- `GET /subscribers`: the hub's subscriptions, one `callback lease_seconds` line each.
- `/linked/<path>`: a file with the WebSub `Link` headers (hub, and the topic as rel="self"),
  for discovery by headers (websub.rocks 100, 104, 203); `/redirect302/<path>` and
  `/redirect301/<path>` redirect there (websub.rocks 201, 202).
- With `deny`, the hub denies every subscription (websub.rocks 204).
"""
import hashlib
import hmac
import os
import sqlite3
import sys

import requests
from celery import Celery
from flask import Flask, Response, abort, request
from flask_websub.hub import Hub, SQLite3HubStorage
from werkzeug.serving import make_server

ORIGIN = "http://sample.example.org"
tree, db = sys.argv[1], sys.argv[2]

app = Flask(__name__)
celery = Celery("hub", broker="memory://", backend="cache+memory://")
celery.conf.task_always_eager = True
celery.conf.task_eager_propagates = False
hub = Hub(
    SQLite3HubStorage(db),
    celery,
    HUB_MIN_LEASE_SECONDS=60,
    HUB_DEFAULT_LEASE_SECONDS=3600,
    MAX_ATTEMPTS=3,
    BACKOFF_BASE=0.0,
    REQUEST_TIMEOUT=10,
)
app.register_blueprint(hub.build_blueprint(url_prefix="/hub"))
if len(sys.argv) > 3 and sys.argv[3] == "deny":
    @hub.register_validator
    def deny(callback_url, topic_url, *args):
        return "this hub takes no subscriptions today"

origin = None


def read(name):
    path = os.path.realpath(os.path.join(tree, name))
    if not path.startswith(os.path.realpath(tree)) or not os.path.isfile(path):
        abort(404)
    with open(path, "rb") as f:
        body = f.read()
    if name.endswith(".xml"):
        body = body.replace(ORIGIN.encode(), origin.encode())
    return body


def links():
    return '<%s/hub>; rel="hub", <%s/notification/changelist>; rel="self"' % (origin, origin)


@app.route("/notification/changelist", methods=["GET", "HEAD"])
def topic():
    return Response(read("changelist.xml"), mimetype="application/xml", headers={"Link": links()})


@app.route("/publish", methods=["POST"])
def publish():
    hub.config["SIGNATURE_ALGORITHM"] = request.args.get("alg", "sha512")
    hub.send_change_notification.delay(origin + "/notification/changelist")
    return "published\n"


@app.route("/forge", methods=["POST"])
def forge():
    body = read("changelist.xml")
    sent = 0
    for callback, _secret in hub.storage.get_callbacks(origin + "/notification/changelist"):
        headers = {"Content-Type": "application/xml", "Link": links()}
        if request.args.get("kind") == "forged":
            sig = hmac.new(b"not the secret", body, hashlib.sha256).hexdigest()
            headers["X-Hub-Signature"] = "sha256=" + sig
        r = requests.post(callback, data=body, headers=headers, timeout=10)
        sent += 1
        print("forge", r.status_code, file=sys.stderr)
    return "%d\n" % sent


@app.route("/subscribers")
def subscribers():
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT callback_url, expiration_time FROM hub").fetchall()
    return "".join("%s %s\n" % r for r in rows)


@app.route("/linked/<path:name>", methods=["GET", "HEAD"])
def linked(name):
    return Response(read(name), mimetype="application/xml", headers={"Link": links()})


@app.route("/redirect302/<path:name>", methods=["GET", "HEAD"])
def redirect302(name):
    return Response("", status=302, headers={"Location": origin + "/linked/" + name})


@app.route("/redirect301/<path:name>", methods=["GET", "HEAD"])
def redirect301(name):
    return Response("", status=301, headers={"Location": origin + "/linked/" + name})


@app.route("/<path:name>", methods=["GET", "HEAD"])
def files(name):
    return Response(read(name), mimetype="application/xml" if name.endswith(".xml") else None)


server = make_server("127.0.0.1", 0, app, threaded=True)
origin = "http://127.0.0.1:%d" % server.server_port
print("PORT %d" % server.server_port, flush=True)
server.serve_forever()
