#!/usr/bin/env bash
# Pre-job hook for tilegate's self-hosted GPU runners: refuse any job that would run code from a
# fork's pull request without a maintainer's approval label.
#
# Why a hook: a `pull_request` workflow is read from the pull request's own merge commit, so a
# fork can edit perf.yml and drop its `if:` guard. This script lives on the runner, outside any
# checkout, where no pull request can change it. The runner runs it before every job
# (ACTIONS_RUNNER_HOOK_JOB_STARTED); a non-zero exit fails the job before any of its steps run.
#
# Install (docs/ci.md, "Bringing up a GPU runner"): copy this file from a reviewed checkout of
# main to e.g. /opt/tilegate/runner-job-started.sh (root-owned, not writable by the runner user,
# not inside the runner's folder), then add to the runner's .env file:
#   ACTIONS_RUNNER_HOOK_JOB_STARTED=/opt/tilegate/runner-job-started.sh
#   TILEGATE_REPOSITORY=owner/repo            (optional: refuse jobs of any other repository)
#   TILEGATE_APPROVE_LABEL=perf-approved      (optional: the label that approves a fork's PR)
set -euo pipefail

python3 - <<'EOF'
import json
import os
import sys

event = os.environ.get("GITHUB_EVENT_NAME", "")
repo = os.environ.get("GITHUB_REPOSITORY", "")
allowed_repo = os.environ.get("TILEGATE_REPOSITORY", "")
label = os.environ.get("TILEGATE_APPROVE_LABEL", "perf-approved")


def refuse(why: str) -> None:
    print(f"::error title=Refused by the runner's pre-job hook::{why}")
    sys.exit(1)


if allowed_repo and repo != allowed_repo:
    refuse(f"this runner serves {allowed_repo}, not {repo}")

# Started by someone with write access: pushes, manual runs, schedules.
if event in ("push", "workflow_dispatch", "schedule"):
    sys.exit(0)

if event != "pull_request":
    refuse(f"event '{event}' is not allowed on this runner (pull_request_target and workflow_run "
           "would give a fork's code the base repository's token)")

with open(os.environ["GITHUB_EVENT_PATH"], encoding="utf-8") as f:
    payload = json.load(f)
pr = payload["pull_request"]
head_repo = (pr.get("head", {}).get("repo") or {}).get("full_name")
if head_repo == pr["base"]["repo"]["full_name"]:
    sys.exit(0)  # a branch of this repository: its author has write access

# A fork: only the event of a maintainer adding the label, which approves the commit it is added
# on. A later push (synchronize) is refused until the label is removed and added again.
if payload.get("action") == "labeled" and (payload.get("label") or {}).get("name") == label:
    sender = (payload.get("sender") or {}).get("login", "?")
    print(f"fork pull request #{pr['number']} approved for this runner by {sender} "
          f"(label '{label}', head {pr['head']['sha']})")
    sys.exit(0)
refuse(f"pull request #{pr['number']} comes from the fork {head_repo or '(deleted)'}: a maintainer must review "
       f"it and add the '{label}' label (again after every new push) to run it on this runner")
EOF
