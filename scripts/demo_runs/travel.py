"""Travel runs: the same flight search twice, diverging at one tool call (08, 09), and a booking
blocked by a human approver (13)."""

from __future__ import annotations

from datetime import datetime

from .builder import Run, at

# -- 08/09: same task twice, diverging at one tool call -----------------------------------


def _flight_search(filename: str, started_at: datetime, variant: str) -> Run:
    run = Run(
        filename,
        name="Find cheapest flight BOS\u2192SFO",
        agent_id="trip-planner",
        model="gpt-4o",
        workflow="flight-search",
        environment="prod",
        agent_version="1.5.0",
        tags=["travel", "flights"],
        started_at=started_at,
        seed=808,  # both runs share the seed: identical until they diverge
        user_id="traveler-77",
        thread_id="trip-bos-sfo",  # the same request asked twice: one conversation
        system="You are a travel assistant. Search with the tools, compare options and never book without explicit confirmation.",
    )
    run.user(
        "Find me the cheapest round trip from Boston to San Francisco, leaving Thursday Dec 17 and coming back "
        "Monday Dec 21. Economy, one adult, at most one stop. Don't book yet, just show me the best option."
    )
    run.think(
        "Get the traveler's profile first (home airport, loyalty programs, bag habits), then search flights.",
        context=True,
    )
    c = run.call("get_traveler_profile", {"traveler_id": "self"})
    run.result(
        c,
        {
            "name": "Sam Rivera",
            "home_airports": ["BOS"],
            "loyalty": ["JetBlue TrueBlue", "Alaska Mileage Plan"],
            "seat": "aisle",
            "bags": "carry-on only",
        },
        latency=(90, 200),
    )
    run.think(
        "Origin BOS, destination SFO, out Thursday Dec 17, back Monday Dec 21, 1 adult, economy, max 1 stop, "
        "sorted by price. Carry-on only, so basic fares are fine if a carry-on is included."
    )
    # seq 6: the two runs part ways here.
    year = "2026" if variant == "a" else "2025"
    search = run.call(
        "search_flights",
        {
            "origin": "BOS",
            "destination": "SFO",
            "depart_date": f"{year}-12-17",
            "return_date": f"{year}-12-21",
            "adults": 1,
            "cabin": "economy",
            "max_stops": 1,
            "sort": "price",
        },
    )
    if variant == "a":
        run.result(
            search,
            {
                "currency": "USD",
                "offers": [
                    {
                        "offer_id": "OF-7Q2K1",
                        "carrier": "JetBlue",
                        "stops": 1,
                        "via": "JFK",
                        "out": "06:05-12:31",
                        "back": "13:40-22:58",
                        "fare": "Blue Basic",
                        "price": 318.40,
                    },
                    {
                        "offer_id": "OF-7Q2K4",
                        "carrier": "Alaska",
                        "stops": 0,
                        "out": "08:30-12:05",
                        "back": "10:15-18:59",
                        "fare": "Saver",
                        "price": 342.10,
                    },
                    {
                        "offer_id": "OF-7Q2L0",
                        "carrier": "United",
                        "stops": 1,
                        "via": "ORD",
                        "out": "07:00-13:14",
                        "back": "12:25-23:40",
                        "fare": "Basic Economy",
                        "price": 351.96,
                    },
                ],
            },
            latency=(1800, 3200),
        )
        run.think(
            "Cheapest is JetBlue at $318.40 via JFK (Blue Basic); the Alaska nonstop is $23.70 more. Check Blue "
            "Basic's rules: the traveler flies carry-on only, so a carry-on must be included."
        )
        c = run.call("get_fare_rules", {"offer_id": "OF-7Q2K1"})
        run.result(
            c,
            {
                "fare": "Blue Basic",
                "carry_on": "included",
                "checked_bag": "$40",
                "seat_selection": "fee",
                "changes": "not permitted",
                "refund": "no",
            },
            latency=(300, 700),
        )
        run.decide(
            "Best option: JetBlue via JFK, $318.40 round trip (offer OF-7Q2K1). Out Thu Dec 17 06:05 -> 12:31, "
            "back Mon Dec 21 13:40 -> 22:58, one stop each way. Blue Basic includes a carry-on but allows no "
            "changes or refunds. For $23.70 more, Alaska flies nonstop (08:30 -> 12:05), and you have Mileage Plan. "
            "Nothing is booked - tell me which one you want."
        )
        run.end("succeeded", "Cheapest: JetBlue OF-7Q2K1 $318.40 (1 stop via JFK); nonstop alternative $342.10")
    else:
        run.result(
            search,
            {"error": "INVALID_DATE", "message": "depart_date 2025-12-17 is in the past"},
            status="error",
            error_class="InvalidArgument",
            latency=(200, 400),
        )
        run.think(
            "The search API rejects Dec 17, 2025 as a past date. I can't tell which dates the traveler means, and "
            "I shouldn't guess."
        )
        run.decide(
            "I couldn't search: December 17 appears to be in the past for the flight search. Could you confirm "
            "your travel dates (and the year)?"
        )
        run.end(
            "failed",
            "No flight found: search rejected the dates as past (2025-12-17); asked the user to confirm",
            "InvalidArgument",
        )
    return run


def flight_bos_sfo_a() -> Run:
    return _flight_search("08-flight-bos-sfo-a.jsonl", at("2026-11-25T16:20:05"), "a")


def flight_bos_sfo_b() -> Run:
    return _flight_search("09-flight-bos-sfo-b.jsonl", at("2026-11-26T09:45:31"), "b")


# -- 13: travel booker whose first booking is blocked by a human approver ----------------


def travel_denver_offsite() -> Run:
    run = Run(
        "13-travel-denver-offsite.jsonl",
        name="Book hotel for Denver offsite",
        agent_id="travel-booker",
        model="gpt-4o",
        workflow="trip-booking",
        environment="prod",
        agent_version="1.5.0",
        tags=["travel", "booking", "approval"],
        started_at=at("2026-11-26T11:03:17"),
        seed=1313,
        user_id="traveler-77",
        system="You book business travel. Bookings go through an approver. Company hotel cap: $250 per night in Denver.",
    )
    run.user("Book 3 nights, Dec 8-11, near the Colorado Convention Center in Denver for Priya Natarajan (team offsite).")
    run.think("Search hotels within walking distance of the convention center for Dec 8-11, 1 guest.")
    c = run.call(
        "search_hotels",
        {
            "near": "Colorado Convention Center, Denver",
            "check_in": "2026-12-08",
            "check_out": "2026-12-11",
            "guests": 1,
            "radius_km": 1.5,
        },
    )
    run.result(
        c,
        {
            "hotels": [
                {"id": "H-DEN-114", "name": "The Crawford Hotel", "distance_km": 1.4, "rating": 4.8, "nightly_usd": 412.0},
                {
                    "id": "H-DEN-087",
                    "name": "Hyatt Place Denver Downtown",
                    "distance_km": 0.6,
                    "rating": 4.3,
                    "nightly_usd": 229.0,
                },
                {
                    "id": "H-DEN-203",
                    "name": "Embassy Suites Denver Downtown",
                    "distance_km": 0.4,
                    "rating": 4.4,
                    "nightly_usd": 264.0,
                },
            ]
        },
        latency=(900, 1800),
    )
    run.think("The Crawford Hotel has the best rating (4.8). Book it for the three nights.")
    c = run.call(
        "book_hotel", {"hotel_id": "H-DEN-114", "guest": "Priya Natarajan", "check_in": "2026-12-08", "check_out": "2026-12-11"}
    )
    # seq 7: the approver refuses the action.
    run.result(
        c,
        "Action blocked: booking request denied by approver M. Okafor - 'The Crawford is $412/night, over the "
        "$250/night policy cap for Denver. Please pick something within policy.'",
        status="blocked",
        error_class="ApprovalDenied",
        latency_ms=96_000,
    )
    run.think(
        "I ignored the $250/night cap. Within policy: Hyatt Place Denver Downtown at $229/night, 0.6 km from the "
        "convention center, rated 4.3. Book that."
    )
    c = run.call(
        "book_hotel", {"hotel_id": "H-DEN-087", "guest": "Priya Natarajan", "check_in": "2026-12-08", "check_out": "2026-12-11"}
    )
    run.result(
        c,
        {
            "confirmation": "HPD-88412057",
            "hotel": "Hyatt Place Denver Downtown",
            "nights": 3,
            "nightly_usd": 229.0,
            "total_usd": 778.41,
            "approved_by": "M. Okafor",
        },
        latency_ms=41_000,
    )
    run.decide(
        "Booked Hyatt Place Denver Downtown for Priya Natarajan, Dec 8-11 (3 nights, $229/night, $778.41 with "
        "taxes), confirmation HPD-88412057. It's a 0.6 km walk to the Colorado Convention Center. My first choice "
        "(The Crawford, $412/night) was declined as over the $250 policy cap."
    )
    run.end("succeeded", "Hotel booked within policy after the first choice was blocked by the approver")
    return run
