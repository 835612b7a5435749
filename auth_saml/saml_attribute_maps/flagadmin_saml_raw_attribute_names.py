"""pysaml2 attribute map that matches nothing, so that every attribute keeps its raw Name.

pysaml2 imports every module of this directory by its bare name (it puts the directory on
sys.path), so the module name must be unique across the whole process, and the directory must
hold nothing else (no __init__.py). An empty directory is refused ("No attribute converters").
"""

MAP = {
    # A name format no identity provider sends: no attribute is ever renamed by this map.
    "identifier": "urn:flagadmin:attrname-format:never-sent",
    "fro": {},
    "to": {},
}
