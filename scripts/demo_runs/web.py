"""Web runs: a multi-agent competitor brief (04), a browser agent recording its own state (10), and a
docs crawl with steps lost on the way (14)."""

from __future__ import annotations

from .builder import Run, at

# -- 04: multi-agent run: orchestrator, researcher and writer spans ----------------------


def multi_agent_competitor_brief() -> Run:
    run = Run(
        "04-multi-agent-competitor-brief.jsonl",
        name="Weekly competitor brief: home EV chargers",
        agent_id="orchestrator",
        model="claude-sonnet-4",
        workflow="market-brief",
        environment="prod",
        agent_version="1.5.0",
        tags=["multi-agent", "research", "weekly"],
        started_at=at("2026-11-24T07:30:00"),
        seed=404,
        system="You coordinate a researcher and a writer to produce short market briefs. Check the draft against the findings before publishing.",
    )
    run.user(
        "Prepare this week's one-page competitor brief on US home EV charger pricing: VoltNest, ChargeWell, AmpHaus "
        "and Circuit EV. Focus on list price changes and promotions since last Monday (Nov 17)."
    )
    orch = run.span("orchestrator: weekly competitor brief", agent_id="orchestrator")
    oid = orch["event_id"]
    run.think(
        "Split the work: the researcher collects current prices and promotions for the four brands, with sources, "
        "and diffs them against last week's snapshot; the writer turns the findings into a one-page brief. "
        "I review the draft before publishing.",
        agent_id="orchestrator",
        parent_id=oid,
    )
    res = run.span("researcher: collect prices and promotions", agent_id="researcher", parent_id=oid)
    rid = res["event_id"]
    r = {"agent_id": "researcher", "parent_id": rid}
    run.think(
        "Search the current price of each brand's 40-48A home charger, then compare with the Nov 17 snapshot.",
        model="gpt-4o-mini",
        **r,
    )
    queries = [
        (
            "VoltNest Home 48A charger price",
            [
                {
                    "title": "VoltNest Home 48A Level 2 Charger",
                    "url": "https://voltnest.example/home-48a",
                    "snippet": "Now $599 (was $649). 48A, 25 ft cable, Wi-Fi scheduling.",
                }
            ],
        ),
        (
            "ChargeWell Pulse 48 Black Friday",
            [
                {
                    "title": "ChargeWell Black Friday: 20% off Pulse 48",
                    "url": "https://chargewell.example/deals",
                    "snippet": "Pulse 48 $549, 20% off at checkout through Dec 1 ($439.20).",
                }
            ],
        ),
        (
            "AmpHaus Level 2 40A price",
            [
                {
                    "title": "AmpHaus L2 40A",
                    "url": "https://amphaus.example/l2-40a",
                    "snippet": "$399. Free shipping. Hardwired or NEMA 14-50.",
                }
            ],
        ),
        (
            "Circuit EV Wall Unit price installation promo",
            [
                {
                    "title": "Circuit EV Wall Unit",
                    "url": "https://circuitev.example/wall-unit",
                    "snippet": "$475. Professional installation from $299. Free-install offer ended Nov 23.",
                }
            ],
        ),
    ]
    calls = [run.call("web_search", {"query": q, "num_results": 3}, model="gpt-4o-mini", **r) for q, _ in queries]
    for call_, (_, hits) in zip(calls, queries, strict=True):
        run.result(call_, {"results": hits}, latency=(600, 1500))
    c = run.call(
        "fetch_url", {"url": "https://snapshots.internal.example/pricing/ev-chargers/2026-11-17.json"}, model="gpt-4o-mini", **r
    )
    run.result(
        c,
        {
            "date": "2026-11-17",
            "prices_usd": {
                "VoltNest Home 48A": 649,
                "ChargeWell Pulse 48": 549,
                "AmpHaus L2 40A": 399,
                "Circuit EV Wall Unit": 475,
            },
            "promos": {"Circuit EV Wall Unit": "free standard installation through 2026-11-23"},
        },
        latency=(150, 400),
    )
    run.think(
        "Changes since Nov 17: VoltNest cut $649 -> $599 (-7.7%); ChargeWell list unchanged at $549 but 20% off "
        "through Dec 1 ($439.20); AmpHaus unchanged at $399; Circuit EV unchanged at $475 and its free-install "
        "promo ended Nov 23.",
        model="gpt-4o-mini",
        **r,
    )
    findings = (
        "Findings (sources: brand pages, Nov 17 snapshot):\n"
        "- VoltNest Home 48A: $599, was $649 (-7.7%), permanent list price cut\n"
        "- ChargeWell Pulse 48: $549 list, 20% off through Dec 1 = $439.20 (cheapest this week)\n"
        "- AmpHaus L2 40A: $399, unchanged\n"
        "- Circuit EV Wall Unit: $475, unchanged; free installation offer ended Nov 23"
    )
    run.decide(findings, model="gpt-4o-mini", **r)
    run.close(res)
    wri = run.span("writer: draft the one-page brief", agent_id="writer", parent_id=oid)
    w = {"agent_id": "writer", "parent_id": wri["event_id"]}
    run.think(
        "One page: a headline, a price table for the four brands, three bullets on what changed, and one line on "
        "what to watch next week (post-Black-Friday pricing).",
        **w,
    )
    brief = (
        "# Home EV chargers - week of Nov 24\n\n"
        "**Headline:** ChargeWell is the cheapest 48A charger this week at $439.20 (20% off through Dec 1); "
        "VoltNest cut its list price by $50.\n\n"
        "| Brand | Model | Price | vs Nov 17 |\n|---|---|---|---|\n"
        "| ChargeWell | Pulse 48 | $549 ($439.20 promo) | promo |\n"
        "| VoltNest | Home 48A | $599 | -$50 |\n"
        "| Circuit EV | Wall Unit | $475 | free install ended |\n"
        "| AmpHaus | L2 40A | $399 | = |\n\n"
        "- VoltNest's cut looks permanent (no promo banner).\n"
        "- ChargeWell's discount ends Dec 1.\n"
        "- Circuit EV's effective price rose by the cost of installation.\n\n"
        "**Watch next week:** whether ChargeWell's price returns to $549 after Dec 1."
    )
    c = run.call(
        "write_doc", {"title": "Competitor brief: home EV chargers (Nov 24)", "format": "markdown", "content": brief}, **w
    )
    run.result(c, {"doc_id": "DOC-3317", "url": "https://docs.internal.example/d/DOC-3317", "words": 141}, latency=(300, 700))
    run.decide("Draft DOC-3317 is ready: headline, price table, three bullets, next-week watch item.", **w)
    run.close(wri)
    run.think(
        "Check the draft against the findings: VoltNest $599 (-$50), ChargeWell $439.20 until Dec 1, AmpHaus $399, "
        "Circuit EV $475 with the install offer ended - all match. The headline is supported. Publish.",
        agent_id="orchestrator",
        parent_id=oid,
    )
    c = run.call("publish_doc", {"doc_id": "DOC-3317", "channel": "#market-intel"}, agent_id="orchestrator", parent_id=oid)
    run.result(c, {"published": True, "doc_id": "DOC-3317", "channel": "#market-intel"}, latency=(200, 500))
    run.decide(
        "Published the Nov 24 competitor brief (DOC-3317) to #market-intel. Main points: ChargeWell cheapest at "
        "$439.20 until Dec 1, VoltNest cut $50 to $599, Circuit EV's free installation ended.",
        agent_id="orchestrator",
        parent_id=oid,
    )
    run.close(orch)
    run.end("succeeded", "Brief DOC-3317 published to #market-intel")
    return run


# -- 10: browser agent recording its own state (goal, memory, page summary) --------------


def browser_change_address() -> Run:
    goal = (
        "Change the delivery address of order W-58213 to 41 Larch Street, Apt 3, Portland, ME 04101, only if it has not shipped"
    )
    run = Run(
        "10-browser-change-address.jsonl",
        name="Change delivery address for order W-58213",
        agent_id="web-navigator",
        model="claude-sonnet-4",
        workflow="browser-task",
        environment="prod",
        agent_version="1.5.1",
        tags=["browser", "account"],
        started_at=at("2026-11-24T19:12:40"),
        seed=1010,
        system="You operate a web browser for the user. Before each action, state your goal, what you remember and what the page shows.",
    )
    run.user(
        "Please change the delivery address of my Homestead Goods order W-58213 to 41 Larch Street, Apt 3, "
        "Portland, ME 04101 - I'll be at my sister's that week. Only if it hasn't shipped yet."
    )
    run.think(
        "Open the order list of the Homestead Goods account to find W-58213 and its status.",
        context=True,
        state={"goal": goal, "memory": "Nothing done yet.", "page_summary": "Blank tab."},
    )
    c = run.call("browser.navigate", {"url": "https://www.homesteadgoods.example/account/orders"})
    run.result(
        c,
        "Page 'Your orders': W-58213 - placed Nov 22 - Processing [View] [Track]; W-57790 - Delivered Nov 12; "
        "W-56102 - Delivered Oct 30.",
        latency=(900, 1800),
    )
    run.think(
        "W-58213 is still Processing, so it hasn't shipped and the address can be changed. Open the order.",
        state={
            "goal": goal,
            "memory": "W-58213 status: Processing (not shipped).",
            "page_summary": "Order list: W-58213 Processing; two older orders delivered.",
        },
    )
    c = run.call("browser.click", {"selector": "a[href='/account/orders/W-58213']"})
    run.result(
        c,
        "Order W-58213: Cast iron skillet 12in, Linen apron. Ship to: 9 Pine Hill Rd, Bangor, ME 04401. "
        "Buttons: [Change address] [Cancel order] [Contact support]",
        latency=(700, 1400),
    )
    run.think(
        "The order page has a 'Change address' button; the current ship-to is in Bangor. Click it.",
        state={
            "goal": goal,
            "memory": "W-58213 not shipped. Current ship-to: 9 Pine Hill Rd, Bangor, ME 04401.",
            "page_summary": "Order detail W-58213 with Change address / Cancel order / Contact support.",
        },
    )
    c = run.call("browser.click", {"selector": "button:has-text('Change address')"})
    run.result(
        c,
        "Dialog 'Edit delivery address': Street, Apt/Suite, City, State, ZIP (prefilled with the Bangor address). "
        "Buttons: [Save] [Cancel]",
        latency=(300, 700),
    )
    run.think(
        "Fill in the new address and save.",
        state={
            "goal": goal,
            "memory": "W-58213 not shipped. Address dialog open.",
            "page_summary": "Edit delivery address dialog with five fields.",
        },
    )
    c = run.call(
        "browser.fill_form",
        {"fields": {"Street": "41 Larch Street", "Apt/Suite": "Apt 3", "City": "Portland", "State": "ME", "ZIP": "04101"}},
    )
    run.result(c, "5 fields filled.", latency=(200, 500))
    c = run.call("browser.click", {"selector": "dialog button:has-text('Save')"})
    run.result(
        c,
        "Dialog closed. Banner: 'Address updated. Your order will ship to 41 Larch Street, Apt 3, Portland, ME 04101.'",
        latency=(800, 1500),
    )
    run.observe(
        "Order page now shows Ship to: 41 Larch Street, Apt 3, Portland, ME 04101; status still Processing.",
        state={
            "goal": goal,
            "memory": "Address changed and confirmed by the site's banner.",
            "page_summary": "Order detail W-58213, ship-to Portland ME 04101, Processing.",
        },
    )
    run.decide(
        "Done. Order W-58213 hadn't shipped yet (status Processing), and its delivery address is now 41 Larch "
        "Street, Apt 3, Portland, ME 04101 - the order page confirms the change.",
        state={
            "goal": goal,
            "memory": "Task complete.",
            "page_summary": "Order detail W-58213, ship-to Portland ME 04101, Processing.",
        },
    )
    run.end("succeeded", "Delivery address of W-58213 changed to Portland, ME")
    return run


# -- 14: a docs crawl with steps lost on the way (seq 40-44 missing) ---------------------

_DOC_PAGES = [
    ("/docs/", "Overview", 6),
    ("/docs/install", "Installation", 9),
    ("/docs/quickstart", "Quickstart", 11),
    ("/docs/concepts/sessions", "Sessions", 8),
    ("/docs/concepts/steps", "Steps", 14),
    ("/docs/concepts/cycles", "Decision cycles", 7),
    ("/docs/guides/import", "Importing runs", 12),
    ("/docs/guides/compare", "Comparing runs", 10),
    ("/docs/guides/replay", "What-if replay", 15),
    ("/docs/guides/annotate", "Annotations", 5),
    ("/docs/reference/cli", "CLI reference", 21),
    ("/docs/reference/http-api", "HTTP API", 18),
    ("/docs/reference/sdk", "Python SDK", 24),
    ("/docs/faq", "FAQ", 13),
    ("/docs/changelog", "Changelog", 17),
]


def docs_crawl_gap() -> Run:
    run = Run(
        "14-docs-crawl-gap.jsonl",
        name="Index product docs for the help bot",
        agent_id="docs-indexer",
        model="gpt-4o-mini",
        workflow="docs-crawl",
        environment="dev",
        agent_version="1.5.1",
        tags=["crawler", "indexing"],
        started_at=at("2026-11-19T22:10:00"),
        seed=1414,
    )
    run.user(
        "Crawl https://docs.agentreplay.example/docs/ (15 pages), chunk each page and upsert the chunks into the help-bot index."
    )
    for path, title, chunks in _DOC_PAGES:
        run.ctx = 900 + run.rng.randint(0, 200)
        run.think(f"Next page: {path} ({title}). Fetch it, then chunk and upsert.")
        c = run.call("fetch_page", {"url": f"https://docs.agentreplay.example{path}"})
        words = chunks * run.rng.randint(160, 220)
        run.result(c, {"status": 200, "title": title, "words": words, "chunks": chunks}, latency=(250, 900))
        run.decide(f"{path}: {chunks} chunks upserted ({words} words).")
    run.decide("Crawl complete: 15 pages, 190 chunks upserted into help-bot index.")
    # The recorder lost five events of this run (the end of page 9 and most of page 10).
    run.drop(range(40, 45))
    run.end("succeeded", "15 pages indexed")
    return run
