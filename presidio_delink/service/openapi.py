"""The service's OpenAPI 3.1 description, written by hand (served at ``GET /openapi.json``).

The shapes follow Presidio's two services: ``/check`` results are presidio-analyzer's
``/analyze`` results with the linkage figures added, and ``/delink`` answers as
presidio-anonymizer's ``/anonymize`` does, with the run's figures added.
"""

from __future__ import annotations

from typing import Any

from presidio_delink import __version__

__all__ = ["openapi"]

_ERROR = {"$ref": "#/components/schemas/Error"}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _answer(schema: dict[str, Any], why: str) -> dict[str, Any]:
    return {"description": why, "content": {"application/json": {"schema": schema}}}


def _errors(*codes: int) -> dict[str, Any]:
    why = {
        400: "Malformed JSON, invalid UTF-8, a missing or mistyped field, an unknown field.",
        401: "The server runs with --token-file and the bearer token is missing or wrong.",
        413: "The body or the text is over the server's --max-chars.",
        500: "The worker handling the request died (it is replaced: retry).",
        503: "The server is shutting down, or the LLM failed and the server runs with "
             "--strict (Retry-After says when to retry).",
    }
    return {str(c): _answer(_ERROR, why[c]) for c in codes}


def openapi(health: dict[str, Any], auth: bool) -> dict[str, Any]:
    """The description, with this server's ``k`` and ``max_chars`` in it."""
    k, max_chars = health.get("k"), health.get("max_chars")
    security: list[dict[str, list[str]]] = [{"bearer": []}] if auth else []
    text = {"type": "string", "maxLength": max_chars,
            "description": f"The document (at most {max_chars} characters)."}
    schemas: dict[str, Any] = {
        "Error": {"type": "object", "required": ["error"],
                  "properties": {"error": {"type": "string", "description": "Why, in one line."}}},
        "CheckRequest": {
            "type": "object", "required": ["text"], "additionalProperties": False,
            "properties": {
                "text": text,
                "k": {"type": "integer", "minimum": 2,
                      "description": f"Flag what occurs in fewer than k groups (default {k})."},
            },
        },
        "LinkableNgram": {
            "type": "object",
            "description": "A presidio-analyzer RecognizerResult with the linkage figures.",
            "properties": {
                "entity_type": {"type": "string", "const": "LINKABLE_NGRAM"},
                "start": {"type": "integer"}, "end": {"type": "integer"},
                "score": {"type": "number", "description": "0.85 (df = k - 1) to 1.0 "
                          "(df = 1) alone; 0.7 / 0.6 for a member of a combination."},
                "df": {"type": "integer", "description": "Collection documents holding it."},
                "groups": {"type": "integer", "description": "Collection groups holding it."},
                "view": {"type": "string", "description": "The index view (how the "
                         "adversary normalises words) where it occurs in the fewest groups."},
                "views": {"type": "array", "items": {"type": "string"}},
                "ngram": {"type": "string", "description": "The N-gram as the view reads it."},
                "arity": {"type": "integer", "description": "1 alone; 2 or 3 in a combination."},
                "partners": {"type": "array", "items": {"type": "string"}},
            },
        },
        "CheckResponse": {
            "type": "object",
            "properties": {
                "linkable": {"type": "boolean"},
                "k": {"type": "integer"},
                "results": {"type": "array", "items": _ref("LinkableNgram")},
                "timings": {"type": "object"},
            },
        },
        "DelinkRequest": {
            "type": "object", "required": ["text"], "additionalProperties": False,
            "properties": {
                "text": text,
                "id": {"type": "string", "description": "The document's id (in the record, "
                       "and its source when source_id is not given)."},
                "source_id": {"type": "string", "description": "The id of its source in the "
                              "collection: the output is audited (risk) and, with --protect, "
                              "protected."},
                "return_audit": {"type": "boolean", "default": False, "description":
                                 "Return the edits with the removed phrases (sensitive)."},
            },
        },
        "Item": {
            "type": "object",
            "description": "A presidio-anonymizer OperatorResult: one edit, offsets into the "
                           "output text.",
            "properties": {
                "start": {"type": "integer"}, "end": {"type": "integer"},
                "entity_type": {"type": "string"}, "text": {"type": "string"},
                "operator": {"type": "string", "const": "delink"},
                "method": {"type": "string", "description": "'llm' (rewritten) or 'redacted'."},
            },
        },
        "DelinkResponse": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "text": {"type": ["string", "null"], "description": "The output, the same as "
                         "`presidio-delink delink` writes; null when the document failed."},
                "items": {"type": "array", "items": {"$ref": "#/components/schemas/Item"}},
                "linkable_after": {"type": "boolean"},
                "failed": {"type": "boolean"}, "error": {"type": ["string", "null"]},
                "source_known": {"type": "boolean"},
                "risk": {"type": ["object", "null"], "description": "The audit when the "
                         "source is known: verdict ('exposed' or 'crowded' under the crowd "
                         "rule), the attacks exposing it or ranking it first, source_ranks."},
                "passes": {"type": "integer"}, "words": {"type": "integer"},
                "words_rewritten": {"type": "integer"}, "words_redacted": {"type": "integer"},
                "llm_calls": {"type": "integer"},
                "warnings": {"type": "array", "items": {"type": "string"}},
                "made_by": {"type": "string", "description": "The run's fingerprint: equal "
                            "to a `delink` record's for the same settings and index."},
                "timings": {"type": "object"},
                "audit": {"type": "array", "description": "Only with return_audit: each edit "
                          "with the phrase it removed (original) and the N-gram it broke."},
            },
        },
        "Health": {"type": "object", "description": "The index (digest of its metadata, "
                   "documents, groups, views) and the settings."},
    }
    body = {"required": True, "content": {"application/json": {"schema": None}}}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "presidio-delink",
            "version": __version__,
            "description": "Finds and removes search-based linkage (rare word N-grams) from "
            "de-identified text: the step after presidio-analyzer and presidio-anonymizer.",
        },
        "paths": {
            "/health": {"get": {
                "summary": "The index's identity and the settings.",
                "responses": {"200": _answer(_ref("Health"), "Serving."),
                              "503": _answer(_ERROR, "Shutting down.")},
            }},
            "/check": {"post": {
                "summary": "The linkable N-grams of a text (presidio-analyzer's result shape).",
                "security": security,
                "requestBody": {**body, "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/CheckRequest"}}}},
                "responses": {"200": _answer({"$ref": "#/components/schemas/CheckResponse"},
                                             "The findings."),
                              **_errors(400, 401, 413, 500, 503)},
            }},
            "/delink": {"post": {
                "summary": "Rewrite a text until no N-gram links below k "
                           "(presidio-anonymizer's response shape).",
                "security": security,
                "requestBody": {**body, "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/DelinkRequest"}}}},
                "responses": {"200": _answer({"$ref": "#/components/schemas/DelinkResponse"},
                                             "The delinked text."),
                              **_errors(400, 401, 413, 500, 503)},
            }},
        },
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
