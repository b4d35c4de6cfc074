"""Judge a PREMIS 3.0 document as the tools preservation systems use judge it.

premis_check.py XSD PREMIS_XML [TRANSFER_DIR]

- valid against the PREMIS 3.0 XSD with lxml, and again with xmlschema;
- every object, event and agent read by metsrw's PREMIS reader (premisrw), as Archivematica's
  "Load PREMIS events from metadata/premis.xml" reads them (load_premis_events_from_xml.py);
- held to that job's rules: every premis:file has an originalName (that exists under
  TRANSFER_DIR, when given), every event links one or more objects and one or more agents of
  the document, every object and agent is linked by an event, every link names an element
  that is there, every eventDateTime parses (Django's dateparse, as Archivematica parses it).

Prints one JSON object: counts, events by type and outcome, and the problems found.
"""

import json
import os
import sys
from collections import Counter

import metsrw
import xmlschema
from django.utils import dateparse
from lxml import etree
from metsrw.plugins import premisrw


class PREMISFile(premisrw.PREMISObject):
    """A premis:file with its originalName, as Archivematica reads it."""

    @property
    def schema(self):
        return super().schema + (("original_name",),)


def identifiers(element, selector):
    return {(i.type, i.value) for i in element.findall(selector)}


def parse_datetime(value):
    parsed = dateparse.parse_datetime(value) or dateparse.parse_date(value)
    if parsed is None:
        raise ValueError(value)
    return parsed


def main():
    xsd, path = sys.argv[1], sys.argv[2]
    transfer = sys.argv[3] if len(sys.argv) > 3 else None
    problems = []
    tree = etree.parse(path)
    schema = etree.XMLSchema(etree.parse(xsd))
    if not schema.validate(tree):
        problems += ["lxml: " + str(e) for e in list(schema.error_log)[:20]]
    for e in list(xmlschema.XMLSchema(xsd).iter_errors(path))[:20]:
        problems.append("xmlschema: " + str(e.reason) + " at " + str(e.path))

    root = tree.getroot()
    version = root.get("version", premisrw.PREMIS_VERSION)
    ns = premisrw.PREMIS_VERSIONS_MAP[version]["namespaces"]

    def elements(selector, factory):
        out = {}
        for el in tree.findall(selector, ns):
            if el.get("version") is None:
                el.set("version", version)
            item = factory(data=premisrw.premis_to_data(el))
            key = (item.identifier_type, item.identifier_value)
            if key in out:
                problems.append("two elements with the identifier %r" % (key,))
            out[key] = item
        return out

    files = elements('premis:object[@xsi:type="premis:file"]', PREMISFile)
    agents = elements("premis:agent", premisrw.PREMISAgent)
    events = elements("premis:event", premisrw.PREMISEvent)

    related_files, related_agents = set(), set()
    by_type = Counter()
    for key, event in events.items():
        linked_files = identifiers(event, "linking_object_identifier")
        linked_agents = identifiers(event, "linking_agent_identifier")
        if not linked_files:
            problems.append("event %r links no object" % (key,))
        if not linked_agents:
            problems.append("event %r links no agent" % (key,))
        for f in linked_files - set(files):
            problems.append("event %r links an object not in the document: %r" % (key, f))
        for a in linked_agents - set(agents):
            problems.append("event %r links an agent not in the document: %r" % (key, a))
        related_files |= linked_files
        related_agents |= linked_agents
        try:
            parse_datetime(event.date_time)
        except (ValueError, TypeError):
            problems.append("event %r: eventDateTime %r does not parse" % (key, event.date_time))
        outcomes = [o.event_outcome for o in event.findall("event_outcome_information")]
        by_type["%s/%s" % (event.type, ",".join(outcomes))] += 1

    names = set()
    for key, f in files.items():
        name = f.original_name if isinstance(f.original_name, str) else ""
        if not name.strip():
            problems.append("object %r has no originalName" % (key,))
        elif transfer is not None and not os.path.isfile(os.path.join(transfer, name.strip())):
            problems.append("object %r: originalName %r is not a file of the transfer" % (key, name))
        names.add(name)
        if key not in related_files:
            problems.append("object %r is linked by no event" % (key,))
        for e in identifiers(f, "linking_event_identifier") - set(events):
            problems.append("object %r links an event not in the document: %r" % (key, e))
    for key in agents:
        if key not in related_agents:
            problems.append("agent %r is linked by no event" % (key,))

    print(json.dumps({
        "metsrw": metsrw.__version__,
        "objects": len(files),
        "events": len(events),
        "agents": len(agents),
        "by_type": dict(sorted(by_type.items())),
        "original_names": sorted(names),
        "problems": problems,
    }, indent=1))


if __name__ == "__main__":
    main()
