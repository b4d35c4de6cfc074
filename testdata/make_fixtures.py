#!/usr/bin/env python3
"""Generate rsmirror's servable test trees: testdata/sample, testdata/syntax/*, testdata/broken/*.

Every tree is a site root for a static server. Absolute URLs inside documents use the
placeholder origin http://sample.example.org; tests/it/server.rs rewrites it to the test
server's http://127.0.0.1:PORT while serving (also inside gzip bodies), and a user can mirror a
tree offline with `--map http://sample.example.org/=testdata/sample`. Resources never contain
the placeholder, so their digests do not change under rewriting.

Deterministic and idempotent: fixed contents and dates, no randomness, gzip with mtime=0, PNG
pixel data stored uncompressed. The generated files are committed; run this only to change them:

    python3 testdata/make_fixtures.py          # (re)write the trees
    python3 testdata/make_fixtures.py --check  # exit 1 if the committed trees differ

Only the three managed folders (sample/, syntax/, broken/) are removed and rewritten.
"""

import base64
import gzip
import hashlib
import os
import shutil
import struct
import sys
import tempfile
import zlib
from urllib.parse import quote

ORIGIN = "http://sample.example.org"
SM_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
RS_NS = "http://www.openarchives.org/rs/terms/"
XHTML_NS = "http://www.w3.org/1999/xhtml"
MANAGED = ("sample", "syntax", "broken")

# One snapshot instant for every tree: Resource Lists are `at` this time, Change Lists start here.
AT = "2026-01-01T00:00:00Z"
COMPLETED = "2026-01-01T00:00:05Z"


# ----------------------------------------------------------------------------------------------
# digests and helpers


def md5_hex(data):
    return hashlib.md5(data).hexdigest()


def sha256_hex(data):
    return hashlib.sha256(data).hexdigest()


def b64(digest_bytes):
    return base64.b64encode(digest_bytes).decode("ascii")


def url(path):
    """Absolute placeholder URL for a site path ('res/with space.txt' -> '.../res/with%20space.txt')."""
    return ORIGIN + "/" + quote(path, safe="/")


class Res:
    """A resource: its site path (file path == decoded URL path), bytes, media type, lastmod."""

    def __init__(self, path, data, mtype, lastmod):
        if isinstance(data, str):
            data = data.encode("utf-8")
        assert b"sample.example.org" not in data, path
        self.path = path
        self.data = data
        self.type = mtype
        self.lastmod = lastmod

    @property
    def loc(self):
        return url(self.path)

    @property
    def length(self):
        return len(self.data)

    def hash_attr(self):
        return "md5:%s sha-256:%s" % (md5_hex(self.data), sha256_hex(self.data))


class Tree:
    def __init__(self, out, name):
        self.dir = os.path.join(out, name)

    def write(self, rel, data):
        if isinstance(data, str):
            data = data.encode("utf-8")
        path = os.path.join(self.dir, *rel.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)

    def write_resources(self, resources):
        for r in resources:
            self.write(r.path, r.data)


def png(width, height, seed):
    """A real, valid RGB PNG whose pixels are a deterministic hash stream (incompressible-looking
    binary with NUL and 0xFF bytes). The zlib stream uses one stored block so the bytes do not
    depend on the local zlib version."""
    stream = b""
    counter = 0
    need = height * width * 3
    while len(stream) < need:
        stream += hashlib.sha256(b"%s:%d" % (seed, counter)).digest()
        counter += 1
    raw = b"".join(
        b"\x00" + stream[y * width * 3:(y + 1) * width * 3] for y in range(height)
    )
    assert len(raw) < 65536
    stored = b"\x78\x01" + b"\x01" + struct.pack("<HH", len(raw), len(raw) ^ 0xFFFF) + raw
    stored += struct.pack(">I", zlib.adler32(raw) & 0xFFFFFFFF)

    def chunk(kind, body):
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", stored)
            + chunk(b"IEND", b""))


# ----------------------------------------------------------------------------------------------
# ResourceSync 1.x documents


def xml_doc(root, body, extra_ns=""):
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<%s xmlns="%s"\n        xmlns:rs="%s"%s>\n%s</%s>\n'
        % (root, SM_NS, RS_NS, extra_ns, body, root)
    )


def source_description(caplist_path):
    body = (
        '  <rs:md capability="description"/>\n'
        "  <url>\n"
        "    <loc>%s</loc>\n"
        '    <rs:md capability="capabilitylist"/>\n'
        "  </url>\n" % url(caplist_path)
    )
    return xml_doc("urlset", body)


def capability_list(entries):
    """entries: [(capability, path)]"""
    body = '  <rs:ln rel="up" href="%s"/>\n' % url(".well-known/resourcesync")
    body += '  <rs:md capability="capabilitylist"/>\n'
    for cap, path in entries:
        body += (
            "  <url>\n    <loc>%s</loc>\n    <rs:md capability=\"%s\"/>\n  </url>\n"
            % (url(path), cap)
        )
    return xml_doc("urlset", body)


def rl_entry(r, lastmod=None, hash_attr=None, length=None, loc=None):
    return (
        "  <url>\n"
        "    <loc>%s</loc>\n"
        "    <lastmod>%s</lastmod>\n"
        '    <rs:md hash="%s" length="%s" type="%s"/>\n'
        "  </url>\n"
        % (
            loc or r.loc,
            lastmod or r.lastmod,
            hash_attr or r.hash_attr(),
            r.length if length is None else length,
            r.type,
        )
    )


def resource_list(resources, up=None, index=None, at=AT, completed=COMPLETED, entries=None):
    body = ""
    if up:
        body += '  <rs:ln rel="up" href="%s"/>\n' % url(up)
    if index:
        body += '  <rs:ln rel="index" href="%s"/>\n' % url(index)
    body += '  <rs:md capability="resourcelist" at="%s"%s/>\n' % (
        at,
        ' completed="%s"' % completed if completed else "",
    )
    if entries is None:
        entries = [rl_entry(r) for r in resources]
    body += "".join(entries)
    return xml_doc("urlset", body)


def change_list_1_1(changes, up, frm=AT):
    """changes: [(Res, change, datetime)] - 1.1: event time in rs:md/@datetime; <lastmod> stays
    the resource's last-modification time (it may be older than `from`)."""
    body = '  <rs:ln rel="up" href="%s"/>\n' % url(up)
    body += '  <rs:md capability="changelist" from="%s"/>\n' % frm
    for r, change, when in changes:
        body += (
            "  <url>\n"
            "    <loc>%s</loc>\n"
            "    <lastmod>%s</lastmod>\n"
            '    <rs:md change="%s" datetime="%s"\n'
            '           hash="%s" length="%d" type="%s"/>\n'
            "  </url>\n" % (r.loc, r.lastmod, change, when, r.hash_attr(), r.length, r.type)
        )
    return xml_doc("urlset", body)


def change_list_1_0(changes, up, frm=AT):
    """changes: [(Res, change, time)] - 1.0: the event time is <lastmod>, no datetime."""
    body = '  <rs:ln rel="up" href="%s"/>\n' % url(up)
    body += '  <rs:md capability="changelist" from="%s"/>\n' % frm
    for r, change, when in changes:
        body += (
            "  <url>\n"
            "    <loc>%s</loc>\n"
            "    <lastmod>%s</lastmod>\n"
            '    <rs:md change="%s" hash="md5:%s" length="%d" type="%s"/>\n'
            "  </url>\n" % (r.loc, when, change, md5_hex(r.data), r.length, r.type)
        )
    return xml_doc("urlset", body)


def three(tree_name):
    """Three small text resources whose bytes name their tree (distinct digests per tree)."""
    return [
        Res("res/a.txt", "%s: resource a\n" % tree_name, "text/plain", "2025-12-01T10:00:00Z"),
        Res("res/b.txt", "%s: resource b, with UTF-8 \u00e9\u00e8\u00ea\n" % tree_name,
            "text/plain", "2025-12-02T11:30:00Z"),
        Res("res/c.txt", "%s: resource c\nsecond line\n" % tree_name, "text/plain",
            "2025-12-03T12:45:30Z"),
    ]


# ----------------------------------------------------------------------------------------------
# trees


def make_sample(out):
    t = Tree(out, "sample")
    res = [
        Res("res/a.txt", "Alpha: the first resource of the rsmirror sample source.\n",
            "text/plain", "2025-12-01T10:00:00Z"),
        Res("res/b.txt", "Beta \u2014 UTF-8 text: caf\u00e9, na\u00efve, \u00c6r\u00f8, "
            "\u65e5\u672c\u8a9e.\n", "text/plain", "2025-12-02T11:30:00Z"),
        Res("res/data.json", '{"name": "sample", "version": 1, "items": [1, 2, 3]}\n',
            "application/json", "2025-12-03T08:15:00Z"),
        Res("res/image.png", png(10, 10, b"rsmirror sample image"), "image/png",
            "2025-12-04T09:00:00Z"),
        Res("res/sub/nested.txt", "A resource in a subfolder.\n", "text/plain",
            "2025-12-05T14:20:00Z"),
        Res("res/with space.txt", "A file whose name has a space in it.\n", "text/plain",
            "2025-12-06T16:00:00Z"),
        Res("res/empty.txt", b"", "text/plain", "2025-12-07T00:00:00Z"),
        Res("res/page.html",
            "<!DOCTYPE html>\r\n<html><head><title>Sample page</title></head>\r\n"
            "<body><p>CRLF line endings, kept byte for byte.</p></body></html>\r\n",
            "text/html", "2025-12-08T18:30:00Z"),
    ]
    t.write_resources(res)
    t.write(".well-known/resourcesync", source_description("rs/capabilitylist.xml"))
    t.write(
        "robots.txt",
        "# robots.txt of the rsmirror sample source\n"
        "User-agent: *\n"
        "Disallow: /private/\n"
        "\n"
        "Sitemap: %s\n" % url("rs/resourcelist-index.xml"),
    )
    t.write(
        "rs/capabilitylist.xml",
        capability_list(
            [("resourcelist", "rs/resourcelist-index.xml"), ("changelist", "rs/changelist.xml")]
        ),
    )
    parts = ["rs/resourcelist-1.xml", "rs/resourcelist-2.xml"]
    body = '  <rs:ln rel="up" href="%s"/>\n' % url("rs/capabilitylist.xml")
    body += '  <rs:md capability="resourcelist" at="%s" completed="%s"/>\n' % (AT, COMPLETED)
    for p in parts:
        body += (
            "  <sitemap>\n    <loc>%s</loc>\n    <rs:md at=\"%s\" completed=\"%s\"/>\n"
            "  </sitemap>\n" % (url(p), AT, COMPLETED)
        )
    t.write("rs/resourcelist-index.xml", xml_doc("sitemapindex", body))
    for p, chunk in zip(parts, (res[:4], res[4:])):
        t.write(p, resource_list(chunk, up="rs/capabilitylist.xml",
                                 index="rs/resourcelist-index.xml"))
    # Open change list: a.txt "updated" after the snapshot, with the same bytes and lastmod as
    # the Resource List says (a re-publication), so a mirror is in sync with or without it.
    t.write(
        "rs/changelist.xml",
        change_list_1_1([(res[0], "updated", "2026-01-02T10:00:00Z")], up="rs/capabilitylist.xml"),
    )
    return res


def make_v1(out, version):
    name = "syntax/v1_1" if version == "1.1" else "syntax/v1_0"
    t = Tree(out, name)
    res = three(name)
    created = Res("res/d.txt", "%s: resource d, created after the snapshot\n" % name,
                  "text/plain", "2026-01-02T09:00:00Z")
    t.write_resources(res + [created])
    t.write(".well-known/resourcesync", source_description("capabilitylist.xml"))
    t.write(
        "capabilitylist.xml",
        capability_list([("resourcelist", "resourcelist.xml"), ("changelist", "changelist.xml")]),
    )
    if version == "1.1":
        t.write("resourcelist.xml", resource_list(res, up="capabilitylist.xml"))
        t.write(
            "changelist.xml",
            change_list_1_1(
                [(res[0], "updated", "2026-01-02T08:00:00Z"),
                 (created, "created", "2026-01-02T09:00:00Z")],
                up="capabilitylist.xml",
            ),
        )
    else:
        # 1.0: md5 only, no `completed`.
        entries = [rl_entry(r, hash_attr="md5:" + md5_hex(r.data)) for r in res]
        t.write("resourcelist.xml",
                resource_list(res, up="capabilitylist.xml", completed=None, entries=entries))
        t.write(
            "changelist.xml",
            change_list_1_0(
                [(res[0], "updated", "2026-01-02T08:00:00Z"),
                 (created, "created", "2026-01-02T09:00:00Z")],
                up="capabilitylist.xml",
            ),
        )


def alpha_doc(body, changeset=False):
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        "<urlset%s xmlns=\"%s\"\n        xmlns:rs=\"%s\"\n        xmlns:xhtml=\"%s\">\n%s</urlset>\n"
        % (' rs:type="changeset"\n       ' if changeset else "", SM_NS, RS_NS, XHTML_NS, body)
    )


def alpha_fixity(r, sha256=False):
    s = '      <rs:fixity type="md5">%s</rs:fixity>\n' % b64(hashlib.md5(r.data).digest())
    if sha256:
        s += '      <rs:fixity type="sha-256">%s</rs:fixity>\n' % b64(
            hashlib.sha256(r.data).digest())
    s += "      <rs:size>%d</rs:size>\n" % r.length
    s += "      <rs:mimetype>%s</rs:mimetype>\n" % r.type
    return s


def make_alpha(out):
    """ResourceSync 0.1 alpha (Aug 2012) syntax, spec digest §13 / seed 003."""
    name = "syntax/alpha2012"
    t = Tree(out, name)
    res = three(name)
    created = Res("res/d.txt", "%s: resource d, created after the sitemap\n" % name,
                  "text/plain", "2026-01-02T06:00:00Z")
    # Created and deleted again after the sitemap: never served (a fetch would 404).
    temporary = Res("res/tmp.txt", "%s: a short-lived resource\n" % name, "text/plain",
                    "2026-01-02T09:00:00Z")
    t.write_resources(res + [created])
    cs_rel = "http://www.openarchives.org/rs/changeset"

    body = '   <xhtml:meta name="DCTERMS.modified" content="%s"/>\n' % AT
    body += '   <xhtml:link href="%s"\n               rel="current %s"/>\n' % (
        url("changeset.xml"), cs_rel)
    for i, r in enumerate(res):
        body += "   <url>\n      <loc>%s</loc>\n      <lastmod>%s</lastmod>\n%s   </url>\n" % (
            r.loc, r.lastmod, alpha_fixity(r, sha256=(i == 2)))
    t.write("resourcelist.xml", alpha_doc(body))

    # The older change set: a.txt updated (same bytes as now).
    body = '   <xhtml:meta name="DCTERMS.modified" content="2026-01-02T00:00:00Z"/>\n'
    body += (
        "   <url>\n      <loc>%s</loc>\n      <lastmod rs:type=\"updated\">%s</lastmod>\n%s"
        "   </url>\n" % (res[0].loc, "2026-01-01T12:00:00Z", alpha_fixity(res[0]))
    )
    t.write("changeset-prev.xml", alpha_doc(body, changeset=True))

    # The current change set (links to itself as current, as in the alpha's Example 2.6).
    body = '   <xhtml:meta name="DCTERMS.modified" content="2026-01-03T00:00:00Z"/>\n'
    body += '   <xhtml:link href="%s"\n               rel="prev %s"/>\n' % (
        url("changeset-prev.xml"), cs_rel)
    body += '   <xhtml:link href="%s"\n               rel="current %s"/>\n' % (
        url("changeset.xml"), cs_rel)
    body += (
        "   <url>\n      <loc>%s</loc>\n      <lastmod rs:type=\"created\">%s</lastmod>\n%s"
        "   </url>\n" % (created.loc, created.lastmod, alpha_fixity(created))
    )
    body += (
        "   <url>\n      <loc>%s</loc>\n      <lastmod rs:type=\"created\">%s</lastmod>\n%s"
        "   </url>\n" % (temporary.loc, temporary.lastmod, alpha_fixity(temporary))
    )
    body += "   <url>\n      <loc>%s</loc>\n      <expires>%s</expires>\n   </url>\n" % (
        temporary.loc, "2026-01-02T12:00:00Z")
    t.write("changeset.xml", alpha_doc(body, changeset=True))


def make_plain(out):
    name = "syntax/plain"
    t = Tree(out, name)
    res = three(name)
    t.write_resources(res)
    body = "".join(
        "  <url>\n    <loc>%s</loc>\n    <lastmod>%s</lastmod>\n  </url>\n" % (r.loc, r.lastmod)
        for r in res
    )
    t.write(
        "resourcelist.xml",
        '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="%s">\n%s</urlset>\n'
        % (SM_NS, body),
    )
    t.write("robots.txt", "User-agent: *\nDisallow:\n\nSitemap: %s\n" % url("resourcelist.xml"))


def make_gzip(out):
    name = "syntax/gzip"
    t = Tree(out, name)
    res = three(name)
    t.write_resources(res)
    t.write(".well-known/resourcesync", source_description("capabilitylist.xml"))
    t.write("capabilitylist.xml", capability_list([("resourcelist", "resourcelist.xml.gz")]))
    doc = resource_list(res, up="capabilitylist.xml").encode("utf-8")
    t.write("resourcelist.xml.gz", gzip.compress(doc, compresslevel=9, mtime=0))


def make_discovery_robots(out):
    name = "syntax/discovery_robots"
    t = Tree(out, name)
    res = three(name)
    t.write_resources(res)
    # No /.well-known/resourcesync, no Capability List: robots.txt is the only way in, and the
    # Resource List has no `up` link (a lone list, as often found in practice).
    t.write("resourcelist.xml", resource_list(res))
    t.write(
        "robots.txt",
        "# no /.well-known/resourcesync here\n"
        "User-agent: *\n"
        "Disallow: /private/\n"
        "Sitemap: %s\n" % url("resourcelist.xml"),
    )


def make_broken(out):
    def tree(case):
        name = "broken/" + case
        return Tree(out, name), three(name)

    # malformed_xml: the second entry's <lastmod> is never closed.
    t, res = tree("malformed_xml")
    t.write_resources(res)
    good = resource_list(res)
    bad = good.replace(
        "<lastmod>%s</lastmod>" % res[1].lastmod, "<lastmod>%s" % res[1].lastmod, 1)
    assert bad != good
    t.write("resourcelist.xml", bad)

    # truncated: the file stops inside the third <url>, right after its <loc>.
    t, res = tree("truncated")
    t.write_resources(res)
    doc = resource_list(res)
    cut = doc.index("<loc>%s</loc>" % res[2].loc) + len("<loc>%s</loc>\n" % res[2].loc)
    t.write("resourcelist.xml", doc[:cut])

    # doctype: an internal DTD subset whose entity is used in the first <loc>.
    t, res = tree("doctype")
    t.write_resources(res)
    doc = resource_list(res)
    doc = doc.replace(
        '<?xml version="1.0" encoding="UTF-8"?>\n',
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<!DOCTYPE urlset [\n  <!ENTITY x "%s">\n]>\n' % res[0].loc, 1)
    doc = doc.replace("<loc>%s</loc>" % res[0].loc, "<loc>&x;</loc>", 1)
    t.write("resourcelist.xml", doc)

    # wrong_namespace: the sitemap elements are in a made-up namespace (rs: is correct).
    t, res = tree("wrong_namespace")
    t.write_resources(res)
    doc = resource_list(res).replace(
        'xmlns="%s"' % SM_NS, 'xmlns="http://www.example.com/schemas/not-a-sitemap/0.9"', 1)
    t.write("resourcelist.xml", doc)

    # digest_mismatch: b.txt's md5 is wrong, its sha-256 and length are right.
    t, res = tree("digest_mismatch")
    t.write_resources(res)
    wrong = "md5:%s sha-256:%s" % (md5_hex(b"not the served bytes\n"), sha256_hex(res[1].data))
    entries = [rl_entry(r, hash_attr=wrong if i == 1 else None) for i, r in enumerate(res)]
    t.write("resourcelist.xml", resource_list(res, entries=entries))

    # length_mismatch: b.txt's length is 7 too big, its digests are right.
    t, res = tree("length_mismatch")
    t.write_resources(res)
    entries = [rl_entry(r, length=r.length + 7 if i == 1 else None) for i, r in enumerate(res)]
    t.write("resourcelist.xml", resource_list(res, entries=entries))

    # missing_resource: b.txt is listed but not served (404).
    t, res = tree("missing_resource")
    t.write_resources([res[0], res[2]])
    t.write("resourcelist.xml", resource_list(res))

    # out_of_scope / file_url: a second entry pointing outside the source.
    for case, foreign in (("out_of_scope", "http://evil.example.net/x"),
                          ("file_url", "file:///etc/passwd")):
        t, res = tree(case)
        t.write_resources(res)
        bait = Res("x", "%s: not served by this source\n" % case, "text/plain",
                   "2025-12-01T10:30:00Z")
        entries = [rl_entry(res[0]), rl_entry(bait, loc=foreign), rl_entry(res[1]),
                   rl_entry(res[2])]
        t.write("resourcelist.xml", resource_list(res, entries=entries))

    # no_zone: b.txt's lastmod has a time but no zone designator.
    t, res = tree("no_zone")
    t.write_resources(res)
    entries = [rl_entry(r, lastmod="2026-01-01T00:00:00" if i == 1 else None)
               for i, r in enumerate(res)]
    t.write("resourcelist.xml", resource_list(res, entries=entries))

    # redirect_offsite: /res/moved is served as a file unless the test sets a Redirect rule;
    # /res/moved-target has the same bytes, for an on-site redirect that must verify.
    t, res = tree("redirect_offsite")
    moved = Res("res/moved", "broken/redirect_offsite: the moved resource\n",
                "application/octet-stream", "2025-12-04T10:00:00Z")
    t.write_resources(res + [moved])
    t.write("res/moved-target", moved.data)
    t.write("resourcelist.xml", resource_list(res + [moved]))


def generate(out):
    for d in MANAGED:
        shutil.rmtree(os.path.join(out, d), ignore_errors=True)
    make_sample(out)
    make_v1(out, "1.1")
    make_v1(out, "1.0")
    make_alpha(out)
    make_plain(out)
    make_gzip(out)
    make_discovery_robots(out)
    make_broken(out)


def files_under(top):
    found = {}
    for d in MANAGED:
        for dirpath, _, names in os.walk(os.path.join(top, d)):
            for n in names:
                p = os.path.join(dirpath, n)
                found[os.path.relpath(p, top)] = p
    return found


def comparable(path):
    with open(path, "rb") as f:
        data = f.read()
    # gzip output depends on the local zlib: compare what is inside.
    if data[:2] == b"\x1f\x8b":
        return gzip.decompress(data)
    return data


def check(here):
    with tempfile.TemporaryDirectory() as tmp:
        generate(tmp)
        want, have = files_under(tmp), files_under(here)
        bad = sorted(set(want) ^ set(have))
        bad += sorted(k for k in set(want) & set(have)
                      if comparable(want[k]) != comparable(have[k]))
        for k in bad:
            print("differs:", k)
        return 1 if bad else 0


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.argv[1:] == ["--check"]:
        sys.exit(check(here))
    if sys.argv[1:]:
        sys.exit(__doc__)
    generate(here)


if __name__ == "__main__":
    main()
