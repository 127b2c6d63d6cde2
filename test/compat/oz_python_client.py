"""Drives the official Python client (PyPI `oz-agent-sdk`) against a live Agentyard server.

Run by test/compat/python-client.test.ts with OZ_API_BASE_URL and WARP_API_KEY set, exactly as a user would
point the client at their own server. Every check is an assertion; the last line printed is a JSON summary
that the TypeScript test checks against the server's own view.
"""

import json
import os
import sys
from datetime import datetime, timedelta, timezone

import oz_agent_sdk
from oz_agent_sdk import (
    AuthenticationError,
    BadRequestError,
    NotFoundError,
    OzAPI,
)

summary = {"sdk_version": oz_agent_sdk.__version__}
client = OzAPI()  # OZ_API_BASE_URL and WARP_API_KEY from the environment, nothing else changed
tag = os.environ["COMPAT_TAG"]


def check(condition, message):
    if not condition:
        raise AssertionError(message)


# --- create and retrieve -------------------------------------------------------------------------------
created = client.agent.run(
    prompt=f"Compat check {tag}\nsecond line",
    config={"name": f"py-{tag}", "model_id": "model-a", "mcp_servers": {"gh": {"command": "gh-mcp", "args": ["--x"]}}},
)
check(created.state == "QUEUED", f"state {created.state}")
check(created.task_id == created.run_id, "task_id mirrors run_id")
run = client.agent.runs.retrieve(created.run_id)
check(run.run_id == created.run_id, "retrieve answers the run")
check(run.title == f"Compat check {tag}", f"title {run.title!r}")
check(run.prompt == f"Compat check {tag}\nsecond line", "prompt")
check(run.state == "QUEUED", "state")
check(run.agent_config.name == f"py-{tag}", "config name")
check(run.agent_config.api_model_id == "model-a", "model id (Python calls it api_model_id)")
check(run.creator is not None and run.creator.type in ("user", "service_account"), "creator")
check(run.session_link.startswith("http"), "session link")
check(run.source == "API", "source")
summary["created"] = created.run_id

# --- list: filters and auto-pagination across pages ---------------------------------------------------
page_ids = []
for i in range(12):
    page_ids.append(client.agent.run(prompt=f"page {i} {tag}", config={"name": f"pages-{tag}", "model_id": "m-page"}).run_id)
seen = [r.run_id for r in client.agent.runs.list(name=f"pages-{tag}", limit=5)]
check(sorted(seen) == sorted(page_ids), f"auto-pagination saw {len(seen)} of 12")
check(len(set(seen)) == len(seen), "no duplicates across pages")
first_page = client.agent.runs.list(name=f"pages-{tag}", limit=5)
check(len(first_page.runs) == 5 and first_page.has_next_page(), "first page of five with a next page")
pages = list(first_page.iter_pages())
check([len(p.runs) for p in pages] == [5, 5, 2], f"page sizes {[len(p.runs) for p in pages]}")
ascending = [r.run_id for r in client.agent.runs.list(name=f"pages-{tag}", sort_by="created_at", sort_order="asc", limit=4)]
check(ascending == page_ids, "created_at ascending follows creation order")
queued = list(client.agent.runs.list(name=f"pages-{tag}", state=["QUEUED", "INPROGRESS"], model_id="m-page", limit=100))
check(len(queued) == 12, "state (repeated) and model_id filters")
aware = datetime.now(timezone.utc) - timedelta(hours=1)
naive = datetime.utcnow() - timedelta(hours=1)
check(len(list(client.agent.runs.list(name=f"pages-{tag}", created_after=aware))) == 12, "created_after with an offset")
check(len(list(client.agent.runs.list(name=f"pages-{tag}", created_after=naive))) == 12, "created_after naive (taken as UTC)")
check(len(list(client.agent.runs.list(name=f"pages-{tag}", created_before=aware))) == 0, "created_before")
check(len(list(client.agent.runs.list(name=f"pages-{tag}", q="page 3 "))) == 1, "q")
check(len(list(client.agent.runs.list(name=f"pages-{tag}", source="API", execution_location="REMOTE"))) == 12, "source")
summary["paged"] = len(seen)

# --- cancel (the SDK returns the raw text: a JSON string arrives with its quotes) -------------------------
cancelled = client.agent.runs.cancel(page_ids[0])
check(cancelled.strip('"') == page_ids[0], f"cancel answered {cancelled!r}")
summary["cancel_raw"] = cancelled
check(client.agent.runs.retrieve(page_ids[0]).state == "CANCELLED", "cancelled state")

# --- error classes ---------------------------------------------------------------------------------------
def expect_error(cls, fn, label):
    try:
        fn()
    except cls as err:
        check(err.body.get("code") if isinstance(err.body, dict) else True, f"{label}: problem body")
        return err
    raise AssertionError(f"{label}: expected {cls.__name__}")


bad_key = OzAPI(api_key="ayk_not-a-key", max_retries=0)
e401 = expect_error(AuthenticationError, lambda: bad_key.agent.runs.list(), "401")
check(e401.status_code == 401, "401 status")
e404 = expect_error(NotFoundError, lambda: client.agent.runs.retrieve("run_does_not_exist"), "404")
check(e404.body["code"] == "resource_not_found", "404 code")
e400 = expect_error(BadRequestError, lambda: client.agent.runs.cancel(page_ids[0]), "cancel twice")
check(e400.body["code"] == "invalid_request", "400 code")
expect_error(BadRequestError, lambda: client.agent.run(prompt=""), "empty prompt")
expect_error(BadRequestError, lambda: client.agent.runs.list(limit=501), "limit 501")
summary["errors"] = ["AuthenticationError", "NotFoundError", "BadRequestError"]

# --- newer endpoints of the client -------------------------------------------------------------------------
followup = client.agent.runs.submit_followup(created.run_id, message="also look at the docs", mode="normal")
check(isinstance(followup, dict) and followup.get("run_id") == created.run_id, f"follow-up answered {followup!r}")
attachments = client.agent.runs.list_handoff_attachments(created.run_id)
check(attachments.attachments == [], "no attachments")
environments = client.agent.list_environments()
check(environments.environments == [], "environments")
agents = client.agent.list()
check(isinstance(agents.agents, list), "agents")
expect_error(NotFoundError, lambda: client.agent.get_artifact("art_missing"), "artifact 404")
check(client.agent.sessions.check_redirect(run.session_id).conversation_id is None, "session redirect")
check(client.agent.conversations.check_redirect("conv-1").session_id is None, "conversation redirect")

identity = client.agent.agent.create(name=f"bot-{tag}", description="compat bot", skills=["acme/repo:review"])
check(identity.uid and identity.name == f"bot-{tag}" and identity.available, "identity created")
# Strict validation against the client's own model: every member it requires is there, with its type.
from oz_agent_sdk.types.agent.agent_response import AgentResponse  # noqa: E402

strict = AgentResponse.model_validate(client.agent.agent.with_raw_response.get(identity.uid).http_response.json())
check(strict.default_runner_uid == "" and strict.secrets == [], f"no default runner, no secrets: {strict}")
check(strict.memory.attached_stores == [] and strict.memory.auto_memory.enabled is False, "no memory store")
check(strict.skills == ["acme/repo:review"], f"skills {strict.skills}")
check(any(a.uid == identity.uid for a in client.agent.agent.list().agents), "identity listed")
updated = client.agent.agent.update(identity.uid, name=f"bot2-{tag}")
check(updated.name == f"bot2-{tag}", "identity renamed")
check(client.agent.agent.get(identity.uid).name == f"bot2-{tag}", "identity fetched")
as_bot = client.agent.run(prompt="as the bot", agent_identity_uid=identity.uid)
check(client.agent.runs.retrieve(as_bot.run_id).state == "QUEUED", "run as identity")
client.agent.agent.delete(identity.uid)
expect_error(NotFoundError, lambda: client.agent.agent.get(identity.uid), "deleted identity")
summary["identity"] = identity.uid

print(json.dumps(summary))
sys.stdout.flush()
