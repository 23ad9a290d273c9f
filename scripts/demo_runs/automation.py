"""Scripted automation: deterministic scripts in fallback blocks (05, 06) and a long CRM data
migration of more than 2,000 steps (07)."""

from __future__ import annotations

from .builder import LLAMA, Run, at

# -- 05/06: deterministic scripts in fallback blocks --------------------------------------


def fallback_invoice_portal() -> Run:
    run = Run(
        "05-fallback-invoice-portal.jsonl",
        name="Upload invoice INV-2291 to Kestrel Supply portal",
        agent_id="ap-invoice-bot",
        model="gpt-4o",
        workflow="supplier-invoice-upload",
        environment="prod",
        agent_version="1.4.0",
        tags=["fallback", "browser", "accounts-payable"],
        started_at=at("2026-11-20T09:00:00"),
        seed=505,
        system=(
            "You take over a scripted browser task when a scripted step fails. Finish the block's task on the "
            "current page, then say what changed so the script can be fixed."
        ),
    )
    run.user(
        "Scheduled job: upload approved invoice INV-2291 (Kestrel Supply, $4,812.60, PO-66017) to the supplier "
        "portal and record the confirmation number."
    )
    s = {"agent_id": "script", "scripted": True}

    login = run.span(
        "fallback block: Log in to the Kestrel Supply portal",
        agent_id="script",
        metadata={"block": "fallback", "task": "Log in to the Kestrel Supply portal"},
    )
    p = {"parent_id": login["event_id"]}
    c = run.call("browser.goto", {"url": "https://portal.kestrelsupply.example/login"}, **s, **p)
    run.result(c, "200 OK - 'Kestrel Supply | Vendor Portal | Sign in'", latency=(700, 1500))
    c = run.call("browser.fill", {"selector": "#username", "value": "ap-automation"}, **s, **p)
    run.result(c, "filled #username", latency=(30, 90))
    c = run.call("browser.click", {"selector": "button#sso-login"}, **s, **p)
    run.result(c, "Navigated to /dashboard - signed in as ap-automation (single sign-on)", latency=(1200, 2400))
    run.close(login, agent_invoked=False, success=True)

    upload = run.span(
        "fallback block: Upload invoice INV-2291 and submit it",
        agent_id="script",
        metadata={"block": "fallback", "task": "Upload invoice INV-2291 against PO-66017 and submit it"},
    )
    p = {"parent_id": upload["event_id"]}
    c = run.call("browser.goto", {"url": "https://portal.kestrelsupply.example/invoices/new"}, **s, **p)
    run.result(c, "200 OK - 'New invoice'", latency=(600, 1200))
    c = run.call("browser.fill", {"selector": "#po-number", "value": "PO-66017"}, **s, **p)
    run.result(c, "filled #po-number", latency=(30, 90))
    c = run.call("browser.fill", {"selector": "#invoice-amount", "value": "4812.60"}, **s, **p)
    run.result(c, "filled #invoice-amount", latency=(30, 90))
    c = run.call("browser.upload", {"selector": "input#invoice-pdf", "file": "invoices/2026-11/INV-2291.pdf"}, **s, **p)
    run.result(c, "uploaded INV-2291.pdf (182 KB)", latency=(400, 900))
    c = run.call("browser.click", {"selector": "button#submit-invoice"}, **s, **p)
    # seq 19: the scripted action fails; the agent takes over inside the same block.
    run.result(
        c,
        'No element matches selector "button#submit-invoice" (waited 5000 ms). The page may have changed since '
        "the script was recorded.",
        status="error",
        error_class="SelectorNotFound",
        latency_ms=5000,
    )
    a = {"agent_id": "ap-invoice-bot", **p}
    run.think(
        "The scripted submit button 'button#submit-invoice' is gone. Take a snapshot of the form to find the "
        "current submit control.",
        context=True,
        **a,
    )
    c = run.call("browser.snapshot", {"mode": "accessibility"}, **a)
    run.result(
        c,
        'form "New invoice"\n'
        '  textbox "PO number" value="PO-66017"\n'
        '  textbox "Amount (USD)" value="4812.60"\n'
        '  file "Invoice PDF" value="INV-2291.pdf"\n'
        '  checkbox "I confirm this invoice matches the purchase order" name=po_match_confirm checked=false\n'
        '  button "Review & send" data-testid=invoice-review-send disabled\n'
        '  link "Save as draft"',
        latency=(200, 500),
    )
    run.think(
        "The submit button is now 'Review & send' and stays disabled until the PO-match checkbox is ticked. "
        "The invoice matches PO-66017 (same amount), so tick it and click 'Review & send'.",
        **a,
    )
    c1 = run.call("browser.check", {"selector": "input[name=po_match_confirm]"}, **a)
    c2 = run.call("browser.click", {"selector": "[data-testid=invoice-review-send]"}, **a)
    run.result(c1, "checked input[name=po_match_confirm]", latency=(30, 90))
    run.result(
        c2,
        "Navigated to /invoices/review - 'Review invoice INV-2291': PO-66017, $4,812.60, 1 attachment. "
        "Buttons: [Back] [Confirm and send]",
        latency=(700, 1300),
    )
    run.think("A review step was added before sending. Everything matches; confirm.", **a)
    c = run.call("browser.click", {"selector": "button:has-text('Confirm and send')"}, **a)
    run.result(
        c,
        "Navigated to /invoices/INV-2291 - banner: 'Invoice submitted. Confirmation number KS-CNF-480193.'",
        latency=(900, 1800),
    )
    run.decide(
        "Invoice INV-2291 submitted, confirmation KS-CNF-480193. The script needs updating: submit is now "
        "'Review & send' (data-testid=invoice-review-send), enabled only after ticking po_match_confirm, and "
        "followed by a review page with 'Confirm and send'.",
        **a,
    )
    run.close(upload, agent_invoked=True, success=True)

    c = run.call("erp.record_submission", {"invoice": "INV-2291", "portal_confirmation": "KS-CNF-480193"}, **s)
    run.result(c, {"updated": True, "invoice": "INV-2291", "state": "submitted_to_supplier"}, latency=(100, 300))
    run.end("succeeded", "INV-2291 submitted (KS-CNF-480193); agent fallback used once for a changed submit button")
    return run


def fallback_timesheet_script() -> Run:
    run = Run(
        "06-fallback-timesheet-script.jsonl",
        name="Submit weekly timesheet (week 47)",
        agent_id="timesheet-bot",
        model="gpt-4o-mini",
        workflow="timesheet-submit",
        environment="staging",
        agent_version="1.4.0",
        tags=["fallback", "browser"],
        started_at=at("2026-11-21T17:00:00"),
        seed=606,
    )
    s = {"agent_id": "script", "scripted": True}
    block = run.span(
        "fallback block: Submit week 47 timesheet",
        agent_id="script",
        metadata={"block": "fallback", "task": "Submit week 47 timesheet (38.5 h) on the contractor portal"},
    )
    p = {"parent_id": block["event_id"]}
    c = run.call("browser.goto", {"url": "https://contractors.example/timesheets/2026-W47"}, **s, **p)
    run.result(c, "200 OK - 'Timesheet 16-22 Nov 2026 (draft)'", latency=(600, 1200))
    c = run.call("browser.fill", {"selector": "#hours-total", "value": "38.5"}, **s, **p)
    run.result(c, "filled #hours-total", latency=(30, 90))
    c = run.call("browser.select", {"selector": "#project", "value": "ACME-MOBILE-2026"}, **s, **p)
    run.result(c, "selected ACME-MOBILE-2026", latency=(30, 90))
    c = run.call("browser.click", {"selector": "button#submit-timesheet"}, **s, **p)
    run.result(c, "Navigated to /timesheets/2026-W47 - status: Submitted for approval", latency=(800, 1600))
    run.close(block, agent_invoked=False, success=True)
    run.end("succeeded", "Week 47 timesheet submitted by script; agent not needed")
    return run


# -- 07: long data migration (> 2,000 steps) ----------------------------------------------

_COMPANY_A = [
    "Hartwell",
    "Bluegate",
    "Copperline",
    "Northfield",
    "Marlow",
    "Stillwater",
    "Redfern",
    "Ashby",
    "Kestrel",
    "Lindqvist",
    "Oakmont",
    "Parkside",
    "Quill",
    "Ridgeway",
    "Sable",
    "Tamarack",
    "Upland",
    "Vesta",
    "Willow Creek",
    "Yardley",
    "Brookhaven",
    "Cedar & Pine",
    "Dunmore",
    "Elmstead",
    "Fairbanks",
]
_COMPANY_B = [
    "Dental",
    "Logistics",
    "Bakery",
    "Architects",
    "Veterinary",
    "Hardware",
    "Print Co.",
    "Physio",
    "Roofing",
    "Legal LLP",
    "Outfitters",
    "Florists",
    "Auto Repair",
    "Brewing",
    "Accounting",
    "Pharmacy",
    "Opticians",
]
_VALIDATION = [
    ("billing_country", "UK", "expected ISO 3166-1 alpha-2 (GB)"),
    ("vat_id", "DE 81 234", "malformed VAT id"),
    ("industry_code", "99-X", "unknown NAICS code"),
    ("owner_email", "", "required field is empty"),
    ("currency", "RMB", "expected ISO 4217 (CNY)"),
]


def crm_migration_batch7() -> Run:
    total = 520
    run = Run(
        "07-crm-migration-batch7.jsonl",
        name="Migrate legacy CRM accounts, batch 7",
        agent_id="crm-migrator",
        model=LLAMA,
        workflow="crm-migration",
        environment="prod",
        agent_version="1.5.0",
        tags=["migration", "batch", "long-run"],
        started_at=at("2026-11-22T01:00:00"),
        seed=707,
    )
    run.user(
        f"Migrate the {total} accounts of legacy batch 7 (ACC-20001 to ACC-{20000 + total}) from LegacyCRM to "
        "Atlas with field mapping v3. Flag records that fail validation for manual review; checkpoint every 100."
    )
    rng = run.rng
    migrated, flagged = 0, 0
    for i in range(1, total + 1):
        run.ctx = 1900 + rng.randint(0, 350)  # sliding window: instructions + the last few records
        acc = f"ACC-{20000 + i}"
        company = f"{rng.choice(_COMPANY_A)} {rng.choice(_COMPANY_B)}"
        contacts = rng.randint(1, 9)
        run.think(f"{acc} ({company}), {contacts} contacts: map with v3 and write to Atlas.")
        args = {"legacy_id": acc, "mapping": "v3"}
        first = run.call("migrate_account", args)
        roll = rng.random()
        if roll < 0.03:
            run.result(
                first,
                "Atlas API timed out after 30 s (POST /v2/accounts)",
                status="error",
                error_class="TimeoutError",
                latency_ms=30_000,
            )
            run.wait(3_000)
            c = run.call("migrate_account", args, scripted=True, retry=1, parent_id=first["event_id"])
        else:
            c = first
        if 0.03 <= roll < 0.055:
            field, value, why = rng.choice(_VALIDATION)
            run.result(
                c,
                {"error": "validation_failed", "field": field, "value": value, "detail": why},
                status="error",
                error_class="ValidationError",
                latency=(150, 500),
            )
            f = run.call("flag_for_review", {"legacy_id": acc, "reason": f"{field}: {why}"})
            flagged += 1
            run.result(f, {"ticket": f"MIG7-{flagged:03d}"}, latency=(60, 200))
            run.decide(f"{acc} flagged (MIG7-{flagged:03d}): {field} '{value}' - {why}. Continue.")
        else:
            fields = rng.randint(11, 19)
            run.result(c, {"atlas_id": f"atl_{20000 + i}", "fields": fields, "contacts": contacts}, latency=(250, 1100))
            migrated += 1
            run.decide(f"{acc} migrated: {fields} fields, {contacts} contacts.")
        if i % 100 == 0:
            c = run.call("write_checkpoint", {"batch": 7, "last": acc, "migrated": migrated, "flagged": flagged})
            run.result(c, {"saved": True, "checkpoint": f"b7-{i:03d}"}, latency=(40, 150))
    run.decide(f"Batch 7 done: {migrated} accounts migrated, {flagged} flagged for manual review (MIG7-001..MIG7-{flagged:03d}).")
    run.end("succeeded", f"Batch 7: {migrated}/{total} migrated, {flagged} flagged for review")
    return run
