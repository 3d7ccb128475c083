"""The review server: token, Host, assets, escaping, the API over HTTP (a real server)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("starlette", reason="the review extra is not installed")
import httpx  # noqa: E402
from review_helpers import HTML_ID, HTML_TEXT, make_review_files  # noqa: E402

from presidio_delink.review import ReviewSession, Verifier  # noqa: E402
from presidio_delink.review.server import ReviewServer  # noqa: E402


@pytest.fixture(scope="module")
def server(tmp_path_factory, sample_index, sample_deid):  # type: ignore[no-untyped-def]
    folder = tmp_path_factory.mktemp("review-server")
    files = make_review_files(folder, sample_index, sample_deid[:2])
    session = ReviewSession(
        files["delinked"],
        Verifier(sample_index, k=2),
        folder / "reviewed.jsonl",
        input_path=files["input"],
        reviewer="ann",
    )
    srv = ReviewServer(session)
    srv.start()
    yield srv
    srv.stop()
    session.close()


def base(srv: ReviewServer) -> str:
    return f"http://127.0.0.1:{srv.port}"


def get(srv: ReviewServer, path: str, **kw) -> httpx.Response:  # type: ignore[no-untyped-def]
    return httpx.get(base(srv) + path, timeout=30, **kw)


def test_url_is_loopback_with_a_long_random_token(server) -> None:  # type: ignore[no-untyped-def]
    assert server.url.startswith(f"http://127.0.0.1:{server.port}/?token=")
    assert len(server.token) >= 40
    other = ReviewServer(server.session)
    assert other.token != server.token
    other._sock.close()


def test_token_required_everywhere(server) -> None:  # type: ignore[no-untyped-def]
    tok = server.token
    for path in ["/", "/static/app.js", "/api/queue", f"/api/doc?id={HTML_ID}"]:
        r = get(server, path)
        assert r.status_code == 403 and "applicant" not in r.text and HTML_ID not in r.text
        r = get(server, path + ("&" if "?" in path else "?") + "token=" + tok[:-1] + "x")
        assert r.status_code == 403
        r = get(server, path, headers={"X-Review-Token": "wrong"})
        assert r.status_code == 403
        r = get(server, path + ("&" if "?" in path else "?") + "token=" + tok)
        assert r.status_code == 200, path
    # The API's writes take the token in a header only (a form on another site cannot
    # set one): in the query string it is refused.
    body = {"id": HTML_ID, "version": 0, "action": "accept_all"}
    r = httpx.post(base(server) + "/api/act?token=" + tok, json=body, timeout=30)
    assert r.status_code == 403
    r = httpx.post(base(server) + "/api/export?token=" + tok, timeout=30)
    assert r.status_code == 403
    assert not server.session.output.exists()


def test_non_loopback_host_rejected(server) -> None:  # type: ignore[no-untyped-def]
    hdr = {"X-Review-Token": server.token}
    for host in [
        "evil.example",
        f"evil.example:{server.port}",
        "127.0.0.1.evil.example",
        f"127.0.0.1:{server.port + 1}",
        f"10.0.0.1:{server.port}",
        "",
    ]:
        r = get(server, "/api/queue", headers={**hdr, "Host": host})
        assert r.status_code == 403, host
    for host in [f"127.0.0.1:{server.port}", f"localhost:{server.port}"]:
        assert get(server, "/api/queue", headers={**hdr, "Host": host}).status_code == 200


def test_no_path_traversal_in_assets(server) -> None:  # type: ignore[no-untyped-def]
    hdr = {"X-Review-Token": server.token}
    for name in [
        "../server.py",
        "..%2fserver.py",
        "%2e%2e%2fserver.py",
        "..%2f..%2fcli.py",
        "/etc/passwd",
        "%2Fetc%2Fpasswd",
        "app.js%00.py",
        "..\\server.py",
        "../templates/review.html",
        "static/app.js",
    ]:
        r = get(server, "/static/" + name, headers=hdr)
        assert r.status_code in (403, 404), name
        assert "import" not in r.text and "root:" not in r.text
    r = get(server, "/static/app.js", headers=hdr)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/javascript")


def test_headers_forbid_inline_script_and_other_origins(server) -> None:  # type: ignore[no-untyped-def]
    r = get(server, "/?token=" + server.token)
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp
    assert "unsafe-inline" not in csp
    assert r.headers["referrer-policy"] == "no-referrer"
    # The page itself holds no document text; nothing external is referenced.
    assert HTML_TEXT not in r.text and "http://" not in r.text and "https://" not in r.text
    assert "<script>" not in r.text  # only <script src=...>, from this app


def test_document_text_goes_out_as_json_data(server) -> None:  # type: ignore[no-untyped-def]
    hdr = {"X-Review-Token": server.token}
    r = get(server, "/api/doc", params={"id": HTML_ID}, headers=hdr)
    assert r.headers["content-type"].startswith("application/json")
    doc = r.json()
    assert "".join(c["text"] for c in doc["chunks"]) == HTML_TEXT


def test_api_errors(server) -> None:  # type: ignore[no-untyped-def]
    hdr = {"X-Review-Token": server.token}
    assert get(server, "/api/doc", params={"id": "nope"}, headers=hdr).status_code == 404
    assert get(server, "/api/queue", params={"filter": "x"}, headers=hdr).status_code == 400
    url = base(server) + "/api/act"
    for body in [
        b"{",
        b"[]",
        json.dumps({"id": HTML_ID}).encode(),
        json.dumps({"id": HTML_ID, "version": "0", "action": "accept"}).encode(),
    ]:
        assert httpx.post(url, content=body, headers=hdr, timeout=30).status_code == 400
    r = httpx.post(
        url, json={"id": HTML_ID, "version": 0, "action": "drop"}, headers=hdr, timeout=30
    )
    assert r.status_code == 400 and "action must be" in r.json()["error"]


def test_conflict_over_http(server) -> None:  # type: ignore[no-untyped-def]
    hdr = {"X-Review-Token": server.token}
    doc_id = server.session.records[1]["id"]
    doc = get(server, "/api/doc", params={"id": doc_id}, headers=hdr).json()
    c = next(c for c in doc["chunks"] if c["kind"] != "same")
    url = base(server) + "/api/act"
    body = {"id": doc_id, "version": doc["version"], "action": "accept", "chunk": c["i"]}
    assert httpx.post(url, json=body, headers=hdr, timeout=30).json()["ok"]
    r = httpx.post(url, json={**body, "action": "revert"}, headers=hdr, timeout=30)
    assert r.status_code == 409 and r.json()["conflict"]
    assert r.json()["document"]["chunks"][c["i"]]["status"] == "accepted"


def test_cli_serves_until_interrupted(tmp_path, sample_docs, sample_index, sample_deid) -> None:  # type: ignore[no-untyped-def]
    import os
    import re
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from presidio_delink import NgramIndex

    NgramIndex.build(sample_docs[:10], tmp_path / "idx")
    files = make_review_files(tmp_path, sample_index, sample_deid[:1])
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root)}
    cmd = [
        sys.executable,
        "-m",
        "presidio_delink",
        "review",
        "--index",
        str(tmp_path / "idx"),
        str(files["delinked"]),
        "--input",
        str(files["input"]),
        "--reviewer",
        "dee",
    ]
    p = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stderr is not None
        line = p.stderr.readline()
        m = re.search(r"(http://127\.0\.0\.1:\d+/\?token=\S+)", line)
        assert m, line
        r = httpx.get(m.group(1), timeout=30)
        assert r.status_code == 200 and "reviewer: dee" in r.text
        assert httpx.get(m.group(1).split("?")[0], timeout=30).status_code == 403
    finally:
        p.send_signal(signal.SIGINT)
        p.wait(30)
    assert (tmp_path / "delinked.reviewed.jsonl.review.sqlite").exists()
