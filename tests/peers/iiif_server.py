#!/usr/bin/env python3
"""A IIIF Change Discovery API 1.0 publisher for rsmirror's integration tests: Django + djiiif 2.0.0.

    iiif_server.py --items FILE [--page-size 100] [--lenient] [--log FILE]

The first stdout line is `PORT <n>`; the server answers on http://127.0.0.1:<n> until
the process is killed. No Django project on disk: settings are made here, no database.

Items file: a JSON list, in stream order (oldest first: the server does not sort, so a
test can also serve a stream out of order), of
    {"id_slug": "a", "label": "...", "type": "Create|Update|Delete|Move|Refresh|Add|Remove",
     "endTime": "2020-01-01T00:00:00Z", "target_slug": "b"}
target_slug is for Move (the new place). The file is read again on every request.

Routes
  /activity/all-changes          the OrderedCollection (totalItems, first, last)
  /activity/page-<n>             OrderedCollectionPages, n from 0, --page-size activities
                                 each, with partOf, startIndex, prev/next where they exist
  /iiif/<slug>/manifest.json     a Presentation 3 Manifest (djiiif's build_manifest) for
                                 each live slug (created/updated/added/moved-to and not
                                 since deleted/removed/moved-away); 404 otherwise
  /iiif/activity/collection      djiiif's own activity views, unchanged (level 1: the
  /iiif/activity/page/<n>        Create/Update items only; pages from 1)

The collection and pages are built with djiiif's Change Discovery builders
(build_ordered_collection, build_collection_page, build_activity); this script adds what
djiiif 2.0.0 leaves out (the spec's Content-Type with its profile, @context as the one
discovery context, level-2 types: Delete, Move's target, Add's target, Remove's origin,
Refresh with startTime and no object).

--lenient serves what real publishers often serve instead: Content-Type application/json
and @context an array with the discovery context first (djiiif's own DISCOVERY_CONTEXT),
where the spec wants it last or alone.
"""

import argparse
import json
import socketserver
import sys
import threading
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

DISCOVERY_CONTEXT = "http://iiif.io/api/discovery/1/context.json"
DISCOVERY_TYPE = 'application/ld+json;profile="%s"' % DISCOVERY_CONTEXT
PRESENTATION_TYPE = 'application/ld+json;profile="http://iiif.io/api/presentation/3/context.json"'
OPTIONS = None
BASE = None  # http://127.0.0.1:<port>, for djiiif's own views' source


def read_items():
    with open(OPTIONS.items, encoding="utf-8") as f:
        items = json.load(f)
    for i, item in enumerate(items):
        for key in ("id_slug", "type", "endTime"):
            if key not in item:
                raise ValueError("item %d has no %s" % (i, key))
    return items


def live_slugs(items):
    """slug -> (label, endTime of its last change), after replaying the stream in order."""
    live = {}
    for item in items:
        t, slug = item["type"], item["id_slug"]
        if t in ("Create", "Update", "Add"):
            live[slug] = (item.get("label", slug), item["endTime"])
        elif t in ("Delete", "Remove"):
            live.pop(slug, None)
        elif t == "Move":
            old = live.pop(slug, None)
            label = item.get("label") or (old[0] if old else item["target_slug"])
            live[item["target_slug"]] = (label, item["endTime"])
    return live


def djiiif_activity_source():
    """IIIF_ACTIVITY_SOURCE for djiiif's own views: what djiiif supports (Create/Update)."""
    for item in read_items():
        if item["type"] in ("Create", "Update"):
            yield {
                "object_id": "%s/iiif/%s/manifest.json" % (BASE, item["id_slug"]),
                "end_time": item["endTime"],
                "type": item["type"],
            }


def configure(page_size):
    import django
    from django.conf import settings

    settings.configure(
        DEBUG=False,
        SECRET_KEY="rsmirror-test-peer-not-secret",
        ALLOWED_HOSTS=["127.0.0.1", "localhost", "[::1]"],
        ROOT_URLCONF=__name__,
        INSTALLED_APPS=["djiiif"],
        DATABASES={},
        MIDDLEWARE=[],
        TEMPLATES=[],
        USE_TZ=True,
        IIIF_HOST=BASE + "/iiif/",
        IIIF_ACTIVITY_SOURCE=djiiif_activity_source,
        IIIF_ACTIVITY_PAGE_SIZE=page_size,
        LOGGING={
            "version": 1,
            "disable_existing_loggers": False,
            "loggers": {"django.request": {"level": "ERROR"}},
        },
    )
    django.setup()


# Views ---------------------------------------------------------------------------------


def _json(document, content_type):
    from django.http import HttpResponse

    body = json.dumps(document, indent=1, ensure_ascii=False) + "\n"
    response = HttpResponse(body.encode("utf-8"), content_type=content_type)
    response["Access-Control-Allow-Origin"] = "*"
    return response


def _discovery(document):
    import djiiif

    if OPTIONS.lenient:
        document["@context"] = list(djiiif.DISCOVERY_CONTEXT)  # discovery context first
        return _json(document, "application/json")
    document["@context"] = DISCOVERY_CONTEXT
    return _json(document, DISCOVERY_TYPE)


def _urls(request):
    base = request.build_absolute_uri("/").rstrip("/")
    return {
        "collection": base + "/activity/all-changes",
        "page": lambda n: "%s/activity/page-%d" % (base, n),
        "manifest": lambda slug: "%s/iiif/%s/manifest.json" % (base, slug),
    }


def _page_count(items):
    size = OPTIONS.page_size
    return max(1, (len(items) + size - 1) // size)


def collection_view(request):
    import djiiif

    items = read_items()
    u = _urls(request)
    last = _page_count(items) - 1
    return _discovery(
        djiiif.build_ordered_collection(u["collection"], len(items), u["page"](0), u["page"](last))
    )


def _activity(item, u):
    import djiiif

    t = item["type"]
    if t == "Refresh":  # no object; startTime instead of endTime (spec 2.1.5)
        return {"type": "Refresh", "startTime": item["endTime"]}
    activity = djiiif.build_activity(
        u["manifest"](item["id_slug"]),
        item["endTime"],
        activity_type=t,
        object_type=item.get("object_type", "Manifest"),
    )
    if t == "Move":
        activity["target"] = {"id": u["manifest"](item["target_slug"]), "type": "Manifest"}
    elif t == "Add":
        activity["target"] = {"id": u["collection"], "type": "OrderedCollection"}
    elif t == "Remove":
        activity["origin"] = {"id": u["collection"], "type": "OrderedCollection"}
    return activity


def page_view(request, n):
    import djiiif
    from django.http import Http404

    items = read_items()
    pages = _page_count(items)
    if n >= pages:
        raise Http404("no such page")
    u = _urls(request)
    size = OPTIONS.page_size
    chunk = items[n * size : (n + 1) * size]
    return _discovery(
        djiiif.build_collection_page(
            u["page"](n),
            u["collection"],
            [_activity(item, u) for item in chunk],
            prev_url=u["page"](n - 1) if n > 0 else None,
            next_url=u["page"](n + 1) if n < pages - 1 else None,
            start_index=n * size,
        )
    )


def manifest_view(request, slug):
    import djiiif
    from django.http import Http404

    live = live_slugs(read_items())
    if slug not in live:
        raise Http404("no such manifest")
    label, modified = live[slug]
    base = request.build_absolute_uri("/").rstrip("/")
    manifest = djiiif.build_manifest(
        "%s/iiif/%s" % (base, slug),
        1000,
        800,
        label=label,
        metadata=[("Modified", modified)],
    )
    # djiiif names its manifest {image service}/manifest; this one is served at manifest.json.
    manifest["id"] = request.build_absolute_uri(request.path)
    return _json(manifest, "application/json" if OPTIONS.lenient else PRESENTATION_TYPE)


def build_urlpatterns():
    from django.urls import path, re_path
    from djiiif import views

    return [
        path("activity/all-changes", collection_view),
        path("activity/page-<int:n>", page_view),
        re_path(r"^iiif/(?P<slug>[^/]+)/manifest\.json$", manifest_view),
        path("iiif/activity/collection", views.serve_activity_collection),
        path("iiif/activity/page/<int:page>", views.serve_activity_page),
    ]


urlpatterns = []


# Server --------------------------------------------------------------------------------


class ThreadingWSGIServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True


class QuietHandler(WSGIRequestHandler):
    def log_message(self, fmt, *args):
        pass


def main():
    global OPTIONS, BASE, urlpatterns
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--items", required=True, help="JSON items file, read on every request")
    p.add_argument("--page-size", type=int, default=100, help="activities per page (default 100)")
    p.add_argument("--lenient", action="store_true",
                   help="application/json and the discovery context first in @context")
    p.add_argument("--log", help="append each request's path to this file")
    OPTIONS = p.parse_args()
    if OPTIONS.page_size < 1:
        p.error("--page-size must be at least 1")

    httpd = ThreadingWSGIServer(("127.0.0.1", 0), QuietHandler)
    port = httpd.server_address[1]
    BASE = "http://127.0.0.1:%d" % port
    configure(OPTIONS.page_size)
    urlpatterns = build_urlpatterns()
    sys.modules[__name__].urlpatterns = urlpatterns  # ROOT_URLCONF is this module

    from django.core.wsgi import get_wsgi_application

    app = get_wsgi_application()
    lock = threading.Lock()

    def logged(environ, start_response):
        if OPTIONS.log:
            line = environ.get("PATH_INFO", "")
            if environ.get("QUERY_STRING"):
                line += "?" + environ["QUERY_STRING"]
            with lock, open(OPTIONS.log, "a", encoding="utf-8") as f:
                f.write(line + "\n")
        return app(environ, start_response)

    httpd.set_app(logged)
    print("PORT %d" % port, flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
