"""Customer-support runs: a refund waiting for a supervisor's approval (01), a flaky shipment-status
tool and a model rate limit (03), a locked account (15), and an inbox triage that overflows the
context window (17)."""

from __future__ import annotations

from .builder import Run, at

# -- 01: support agent, refund that needs a supervisor's approval ------------------------


def refund_defective_backpack() -> Run:
    run = Run(
        "01-refund-defective-backpack.jsonl",
        name="Refund request: defective backpack",
        agent_id="support-agent",
        model="gpt-4o",
        workflow="customer-support",
        environment="prod",
        agent_version="1.5.0",
        tags=["support", "refund", "approval"],
        started_at=at("2026-11-19T14:02:11"),
        seed=101,
        user_id="cust-2741",
        system=(
            "You are the support assistant of Northwind Outfitters. Be concise and friendly. "
            "Look orders and policies up with your tools before you promise anything. "
            "Refunds above $150 need a support lead's approval (request_approval) before issue_refund."
        ),
    )
    run.user(
        "Hi, I ordered the Trailhead 45L backpack (order NW-238841) two weeks ago and the seam of the left "
        "shoulder strap is already tearing. I'd like a refund, not a replacement - I've already bought a "
        "different bag. Can you help?"
    )
    run.think(
        "The customer wants a refund for a damaged item on order NW-238841. First get the order: item, price, "
        "delivery date, and whether anything was refunded already.",
        context=True,
    )
    c = run.call("get_order", {"order_id": "NW-238841"})
    run.result(
        c,
        {
            "order_id": "NW-238841",
            "status": "delivered",
            "placed_at": "2026-11-03",
            "delivered_at": "2026-11-06",
            "customer_id": "C-55120",
            "items": [{"sku": "TH-45L-SLT", "name": "Trailhead 45L Backpack - Slate", "qty": 1, "unit_price": 189.0}],
            "shipping": 0.0,
            "tax": 11.81,
            "total": 200.81,
            "payment_method": "visa",
            "refunds": [],
        },
        latency=(120, 260),
    )
    run.think(
        "Delivered Nov 6, so 13 days ago. $189.00 item + $11.81 tax, nothing refunded yet. Check the policy for "
        "defective items and its time window."
    )
    c = run.call("search_policy", {"query": "refund for defective item after delivery", "top_k": 2})
    run.result(
        c,
        [
            {
                "id": "POL-RET-004",
                "title": "Defective merchandise",
                "text": "Items with a manufacturing defect reported within 60 days of delivery qualify for a full "
                "refund including tax, or a replacement, at the customer's choice. Photos are requested but not "
                "required for orders under $250. Return shipping is free.",
            },
            {
                "id": "POL-RET-001",
                "title": "Standard returns",
                "text": "Unused items in original packaging may be returned within 30 days of delivery for a refund "
                "of the item price. Return shipping is deducted unless the item is defective.",
            },
        ],
        latency=(300, 700),
    )
    run.think(
        "A strap seam failing after two weeks is a manufacturing defect (POL-RET-004): 13 days < 60, the customer "
        "chose a refund, and the order is under $250 so no photo is needed. Full refund = $200.81 including tax. "
        "That is above the $150 limit, so I must request a support lead's approval first."
    )
    c = run.call(
        "request_approval",
        {
            "action": "issue_refund",
            "order_id": "NW-238841",
            "amount": 200.81,
            "reason": "Strap seam defect on Trailhead 45L, 13 days after delivery (POL-RET-004)",
        },
    )
    run.result(c, {"approval_id": "APR-7731", "status": "pending", "queue": "support-leads"}, latency=(150, 300))
    run.user(
        "Approved. The defect matches two other reports on this production lot of the Trailhead 45L - go ahead "
        "with the full refund and send a return label so QA can look at the bag.",
        wait_ms=214_000,
        metadata={"approval": True, "approval_id": "APR-7731", "approver": "Dana K. (support lead)", "decision": "approved"},
    )
    run.think(
        "APR-7731 approved. Issue the $200.81 refund to the original payment method, then create a prepaid return "
        "label so the warehouse can inspect the bag."
    )
    c = run.call(
        "issue_refund",
        {
            "order_id": "NW-238841",
            "amount": 200.81,
            "reason_code": "DEFECTIVE",
            "approval_id": "APR-7731",
            "destination": "original_payment_method",
        },
    )
    run.result(
        c,
        {
            "refund_id": "RF-90412",
            "status": "processed",
            "amount": 200.81,
            "currency": "USD",
            "expected_settlement": "3-5 business days",
        },
        latency=(600, 1400),
    )
    c = run.call(
        "create_return_label", {"order_id": "NW-238841", "sku": "TH-45L-SLT", "carrier": "UPS", "reason": "defect_inspection"}
    )
    run.result(
        c,
        {"label_id": "RL-55871", "carrier": "UPS", "sent_to_customer": True, "drop_off_by": "2026-12-03"},
        latency=(400, 900),
    )
    run.decide(
        "I'm sorry about the strap - that's a manufacturing defect and you're fully covered. I've issued a refund "
        "of $200.81 (reference RF-90412) to your original payment method; it should show up within 3-5 business "
        "days. I've also emailed you a free UPS return label (RL-55871): please drop the bag off by December 3 so "
        "our quality team can inspect it. You don't need to wait for the return for the refund to arrive."
    )
    run.end("succeeded", "Refund RF-90412 of $200.81 issued for defective backpack (order NW-238841), approved by support lead")
    return run


# -- 03: flaky HTTP tool (two timeouts, then success) and a model rate limit -------------


def shipment_status_retries() -> Run:
    run = Run(
        "03-shipment-status-retries.jsonl",
        name="Shipment status for PO-77120",
        agent_id="logistics-assistant",
        model="gpt-4o-mini",
        workflow="shipment-status",
        environment="staging",
        agent_version="1.5.0",
        tags=["logistics", "retries"],
        started_at=at("2026-11-23T13:05:42"),
        seed=303,
        user_id="cust-5530",
        system="You answer shipment questions for the customer service team. Use the TMS and carrier APIs; give status, last scan and ETA.",
    )
    run.user(
        "Brightwater Foods is asking where purchase order PO-77120 is. It shipped with Freightline last Thursday. "
        "Can you give me the current status and the ETA to their Dayton DC?"
    )
    run.think("Look PO-77120 up in the TMS to get the carrier's PRO number, then ask the carrier.")
    c = run.call("tms_lookup", {"po_number": "PO-77120"})
    run.result(
        c,
        {
            "po_number": "PO-77120",
            "carrier": "Freightline",
            "pro_number": "FL-558213",
            "pallets": 6,
            "ship_date": "2026-11-19",
            "origin": "Allentown, PA",
            "destination": "Dayton, OH (Brightwater DC 3)",
            "promised_delivery": "2026-11-24",
        },
        latency=(200, 500),
    )
    run.think("Query Freightline's tracking API for PRO FL-558213.")
    args = {"url": "https://api.freightline.example/v2/shipments/FL-558213/status", "timeout_s": 10}
    first = run.call("http_get", args)
    run.result(
        first,
        "ReadTimeout: no response from api.freightline.example within 10.0 s",
        status="error",
        error_class="TimeoutError",
        latency_ms=10_000,
    )
    # The runtime retries the same call with backoff: no new model call, so no tokens.
    run.wait(2_000)
    c = run.call("http_get", args, scripted=True, retry=1, parent_id=first["event_id"])
    run.result(
        c,
        "ReadTimeout: no response from api.freightline.example within 10.0 s",
        status="error",
        error_class="TimeoutError",
        latency_ms=10_000,
    )
    run.wait(4_000)
    c = run.call("http_get", args, scripted=True, retry=2, parent_id=first["event_id"])
    run.result(
        c,
        {
            "pro_number": "FL-558213",
            "status": "IN_TRANSIT",
            "last_scan": {"location": "Columbus, OH terminal", "time": "2026-11-23T05:42:00Z", "event": "Departed terminal"},
            "eta": "2026-11-24T16:00:00Z",
            "appointment": {"date": "2026-11-24", "window": "14:00-18:00 ET", "confirmed": True},
            "pieces": 6,
        },
        latency=(700, 1500),
    )
    # seq 12: the model provider throttles the next call; the runtime waits and retries it.
    err = run.error(
        "RateLimitError: Rate limit reached for gpt-4o-mini on tokens per min (TPM): Limit 200000, Used 198733, "
        "Requested 2391. Please try again in 337ms.",
        "RateLimitError",
        model="gpt-4o-mini",
        duration_ms=240,
    )
    run.wait(400)
    run.think(
        "Freightline shows the 6 pallets departed the Columbus, OH terminal at 05:42 UTC today, heading to Dayton. "
        "ETA Nov 24 inside the confirmed 14:00-18:00 appointment, which matches the promised date.",
        retry=1,
        parent_id=err["event_id"],
    )
    run.decide(
        "PO-77120 (Freightline PRO FL-558213, 6 pallets) left the Columbus, OH terminal at 05:42 UTC today and is "
        "in transit to Brightwater DC 3 in Dayton. ETA: Monday Nov 24, within the confirmed 14:00-18:00 ET "
        "delivery appointment - on time against the promised date."
    )
    run.end("succeeded", "Status and ETA for PO-77120 given after 2 carrier API timeouts and 1 model rate limit")
    return run


# -- 15: support, account locked ----------------------------------------------------------


def support_account_locked() -> Run:
    run = Run(
        "15-support-account-locked.jsonl",
        name="Account locked after failed logins",
        agent_id="support-agent",
        model="gpt-4o-mini",
        workflow="customer-support",
        environment="prod",
        agent_version="1.5.0",
        tags=["support", "account"],
        started_at=at("2026-11-25T08:02:51"),
        seed=1515,
        user_id="cust-2741",
        system="You are a support assistant for Fieldnote (a note-taking SaaS). Verify identity before unlocking accounts or resetting MFA.",
    )
    run.user(
        "I can't log in - it says my account is locked. I tried my password a few times after switching phones. Username rkowalski."
    )
    run.think("Check the account state and why it's locked.")
    c = run.call("get_account", {"username": "rkowalski"})
    run.result(
        c,
        {
            "username": "rkowalski",
            "status": "locked",
            "reason": "too_many_failed_logins",
            "failed_attempts": 6,
            "locked_at": "2026-11-25T07:58:12Z",
            "mfa": "totp",
            "plan": "Team",
        },
        latency=(100, 250),
    )
    run.think(
        "Locked after 6 failed attempts; MFA is an authenticator app and they changed phones, so they'll need an "
        "MFA reset too. Verify identity first with a link to the address on file."
    )
    c = run.call("send_verification", {"username": "rkowalski", "channel": "email_on_file"})
    run.result(c, {"sent": True, "channel": "email_on_file", "expires_in_min": 15}, latency=(300, 600))
    run.decide(
        "I've sent a verification link to the email address on your account. Please click it and tell me when you're done."
    )
    run.user("Done, the page says 'identity verified'.", wait_ms=71_000)
    c = run.call("check_verification", {"username": "rkowalski"})
    run.result(c, {"verified": True, "verified_at": "2026-11-25T08:04:37Z"}, latency=(80, 200))
    run.think("Verified. Unlock the account and reset MFA so they can enroll the new phone at next login.")
    c1 = run.call("unlock_account", {"username": "rkowalski", "reason": "verified_user_request"})
    c2 = run.call("reset_mfa", {"username": "rkowalski", "method": "totp"})
    run.result(c1, {"status": "active", "failed_attempts": 0}, latency=(100, 250))
    run.result(c2, {"mfa": "pending_enrollment"}, latency=(100, 250))
    run.decide(
        "Your account is unlocked. I've also reset two-factor authentication: when you log in, you'll be asked to "
        "scan a new QR code with the authenticator app on your new phone. If you don't remember your password, "
        "use 'Forgot password' on the login page."
    )
    run.end("succeeded", "Account unlocked and MFA reset after identity verification")
    return run


# -- 17: inbox triage that overflows the context window -----------------------------------


def inbox_triage_overflow() -> Run:
    run = Run(
        "17-inbox-triage-context-overflow.jsonl",
        name="Triage shared support inbox (morning batch)",
        agent_id="inbox-triage",
        model="gpt-4o-mini",
        workflow="inbox-triage",
        environment="staging",
        agent_version="1.4.0",
        tags=["email", "triage"],
        started_at=at("2026-11-20T06:30:00"),
        seed=1717,
        system="You triage the shared support inbox: label each unread thread (billing, bug, how-to, spam), route it, and draft replies for billing questions.",
    )
    run.user("Scheduled: morning triage of unread threads in the support inbox.")
    run.think("List the unread threads first.")
    c = run.call("list_threads", {"folder": "support", "unread": True, "limit": 50})
    run.result(
        c,
        {
            "count": 38,
            "threads": [
                {"id": "T-88213", "subject": "Re: Re: Re: invoice discrepancy Q3", "messages": 47, "attachments": 3},
                {"id": "T-88240", "subject": "Export to CSV drops the last column", "messages": 2, "attachments": 1},
                {"id": "T-88244", "subject": "How do I add a teammate?", "messages": 1, "attachments": 0},
                {"id": "T-88251", "subject": "Charged twice this month", "messages": 3, "attachments": 0},
            ],
            "more": 34,
        },
        latency=(400, 900),
    )
    run.think("T-88213 is the longest and about billing. Read it fully, attachments included, to draft a reply.")
    c = run.call("get_thread", {"thread_id": "T-88213", "include_attachments": True})
    run.result(
        c,
        "47 messages between the customer's finance team and billing (Jul 3 - Nov 19). Attachments: "
        "Statement_Q3.pdf (212 pages, extracted to text), usage_export.csv (18,400 rows), "
        "credit_note_draft.docx. [recorded content truncated: 498,311 characters]",
        latency=(2500, 4000),
    )
    run.ctx += 124_600  # the whole thread went into the prompt
    run.error(
        "ContextWindowExceededError: This model's maximum context length is 128000 tokens. However, your messages "
        "resulted in 131772 tokens. Please reduce the length of the messages.",
        "ContextWindowExceededError",
        model="gpt-4o-mini",
        duration_ms=390,
    )
    err = run.steps[-1]
    run.wait(1000)
    run.error(
        "ContextWindowExceededError: This model's maximum context length is 128000 tokens. However, your messages "
        "resulted in 131772 tokens. Please reduce the length of the messages.",
        "ContextWindowExceededError",
        model="gpt-4o-mini",
        duration_ms=360,
        retry=1,
        parent_id=err["event_id"],
    )
    run.end(
        "failed",
        "Stopped at thread T-88213: attachments pushed the prompt past the 128k context window",
        "ContextWindowExceededError",
    )
    return run
