"""Reads every artifact type of a run through the official Python client (PyPI `oz-agent-sdk`).

Run by test/compat/python-client.test.ts with OZ_API_BASE_URL, WARP_API_KEY, RUN_ID (a run whose agent
reported a FILE, a SCREENSHOT, a PLAN and a pull request) and EXPIRED_URL (a download URL signed by the
server's key with an expiry in the past). Every check is an assertion; the last line is a JSON summary.
"""

import json
import os
import sys
from urllib.parse import parse_qs, urlencode, urlparse, urlunparse

import httpx
from oz_agent_sdk import OzAPI
from oz_agent_sdk.types.agent_get_artifact_response import (
    FileArtifactResponse,
    PlanArtifactResponse,
    ScreenshotArtifactResponse,
)
from oz_agent_sdk.types.agent.artifact_item import FileArtifact, PlanArtifact, PullRequestArtifact, ScreenshotArtifact


def check(condition, message):
    if not condition:
        raise AssertionError(message)


client = OzAPI()
run = client.agent.runs.retrieve(os.environ["RUN_ID"])
by_type = {a.artifact_type: a for a in run.artifacts}
check(sorted(by_type) == ["FILE", "PLAN", "PULL_REQUEST", "SCREENSHOT"], f"artifact types {sorted(by_type)}")
check(isinstance(by_type["FILE"], FileArtifact), f"run FILE parsed as {type(by_type['FILE']).__name__}")
check(isinstance(by_type["SCREENSHOT"], ScreenshotArtifact), "run SCREENSHOT model")
check(isinstance(by_type["PLAN"], PlanArtifact), "run PLAN model")
check(isinstance(by_type["PULL_REQUEST"], PullRequestArtifact), "run PULL_REQUEST model")
item = by_type["FILE"].data
check((item.filepath, item.filename, item.mime_type) == ("out/report.md", "report.md", "text/markdown"), f"{item}")
check(item.size_bytes == len(b"# Report\n\nAll green.\n"), f"size_bytes {item.size_bytes}")
check(by_type["SCREENSHOT"].data.mime_type == "image/png", "screenshot mime type")
check(by_type["PLAN"].data.document_uid and by_type["PLAN"].data.notebook_uid == run.run_id, "plan ids")

# --- GET /agent/artifacts/{uid}: each type to its own model ----------------------------------------------
file = client.agent.get_artifact(item.artifact_uid)
check(isinstance(file, FileArtifactResponse), f"FILE parsed as {type(file).__name__}")
check(file.data.content_type == "text/markdown" and file.data.filename == "report.md", f"{file.data}")
check(file.data.filepath == "out/report.md" and file.data.description == "The report", "file fields")
check(file.data.expires_at.tzinfo is not None, "expires_at is a zoned datetime")
downloaded = httpx.get(file.data.download_url)  # no key: the URL is the credential
check(downloaded.status_code == 200, f"download answered {downloaded.status_code}")
check(downloaded.content == b"# Report\n\nAll green.\n", "the file's bytes")
check(downloaded.headers["content-type"].startswith("text/markdown"), downloaded.headers["content-type"])

shot = client.agent.get_artifact(by_type["SCREENSHOT"].data.artifact_uid)
check(isinstance(shot, ScreenshotArtifactResponse), f"SCREENSHOT parsed as {type(shot).__name__}")
check(shot.data.content_type == "image/png" and shot.data.description == "The screen", f"{shot.data}")
png = httpx.get(shot.data.download_url)
check(png.status_code == 200 and png.content.startswith(b"\x89PNG"), "screenshot bytes")

plan = client.agent.get_artifact(by_type["PLAN"].data.artifact_uid)
check(isinstance(plan, PlanArtifactResponse), f"PLAN parsed as {type(plan).__name__}")
check(plan.data.content == "# Plan\n\n1. Fix it\n" and plan.data.content_type == "text/markdown", f"{plan.data}")
check(plan.data.notebook_uid == run.run_id and plan.data.title == "The plan", "plan fields")

# --- refused download URLs ------------------------------------------------------------------------------
parts = urlparse(file.data.download_url)
query = parse_qs(parts.query)
later = urlunparse(parts._replace(query=urlencode({"expires": int(query["expires"][0]) + 3600, "signature": query["signature"][0]})))
tampered = httpx.get(later)
check(tampered.status_code == 403 and tampered.json()["code"] == "download_url_invalid", f"tampered: {tampered.text}")
other = urlunparse(parts._replace(path=parts.path.replace(item.artifact_uid, by_type["SCREENSHOT"].data.artifact_uid)))
check(httpx.get(other).status_code == 403, "a signature is bound to its artifact")
expired = httpx.get(os.environ["EXPIRED_URL"])
check(expired.status_code == 403 and expired.json()["code"] == "download_url_expired", f"expired: {expired.text}")

print(json.dumps({"file": item.artifact_uid, "downloaded": len(downloaded.content)}))
sys.stdout.flush()
