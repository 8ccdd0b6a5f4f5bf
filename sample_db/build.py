"""Rebuild the bundled sample store, sample_db/sample.db, from sample_db/source.json.

    python sample_db/build.py [OUTPUT]

The hand-written part (documents, chunks, entities, communities, claims) lives in
source.json. This script adds the generated part: a harbor traffic register and a rain
book (harbor-city), a caravan ledger and an export ledger (tea-history-zh), and the long
Marrowick Chronicle, a summary over 40,000 characters that global search has to split
into several parts. Everything is derived by arithmetic from fixed tables, never from a
random source, so every build writes identical rows.

IDs: communities `<namespace>/<n>`; documents, chunks, entities and claims
`<namespace>/doc/<i>`, `/chunk/<i>`, `/entity/<i>`, `/claim/<i>`, numbered from 1 in
source order. Levels follow the parent links (roots are level 0).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:  # runnable as `python sample_db/build.py`
    sys.path.insert(0, str(HERE.parent))

from graphrag_tui.store import CommunityStore  # noqa: E402

SOURCE = HERE / "source.json"
OUTPUT = HERE / "sample.db"

# -- harbor-city: traffic register (leaf 28) ---------------------------------------------

SHIPS = [
    "Tessaly Dawn", "Tessaly Meridian", "Northgate Pine", "Northgate Harvest",
    "Calloway Star", "Sorrel Trader", "Grey Heron", "Amber Coast", "Kittiwake",
    "Lowland Spirit",
]
BERTHS = ["Berth 1", "Berth 2", "Berth 3", "Berth 4", "Berth 5", "Berth 6"]
CARGOES = [
    "timber", "grain", "fuel oil", "containers", "fertiliser", "steel coil",
    "refrigerated fish", "farm machinery",
]
MONTHS = [
    "January", "February", "March", "April", "May", "June", "July", "August",
    "September", "October", "November", "December",
]


def _register(add_chunk, add_claim, entity) -> None:
    per_page, entries = 5, 80
    for page in range(entries // per_page):
        lines, claims = [], []
        for i in range(page * per_page, (page + 1) * per_page):
            year = 2015 + i // 16
            month = MONTHS[(i * 5) % 12]
            ship = SHIPS[(i * 3) % len(SHIPS)]
            cargo = CARGOES[(i * 5 + (i * 3) % len(SHIPS)) % len(CARGOES)]
            if i % 9 == 4:
                text = (f"{ship} anchored in the Sorrel roads in {month} {year} to wait for "
                        f"a pilot, carrying {cargo}.")
                berth = None
            else:
                berth = BERTHS[(i * 7) % len(BERTHS)]
                text = f"{ship} berthed at {berth} in {month} {year} with a cargo of {cargo}."
            lines.append(text)
            claims.append((entity(ship, "A cargo ship calling at Marrowick."),
                           entity(berth, "A berth of the Marrowick harbor.") if berth else None,
                           text))
        chunk = add_chunk("register", f"Register page {page + 1}. " + " ".join(lines))
        for subject, obj, text in claims:
            add_claim(28, subject, obj, chunk, text)


# -- harbor-city: rain book (leaf 17) ----------------------------------------------------

WINDS = ["south-westerly", "westerly", "southerly", "north-westerly", "easterly"]
# Rain in millimetres for 1 October .. 29 November 1998; the wet run before the flood.
RAIN_MM = [
    3, 0, 0, 7, 12, 4, 0, 0, 1, 9, 15, 6, 2, 0, 0, 11, 18, 9, 3, 0,
    5, 14, 21, 8, 0, 0, 2, 13, 19, 10, 4, 0, 6, 17, 24, 12, 7, 3, 38, 52,
    61, 44, 57, 30, 9, 2, 0, 0, 4, 8, 3, 0, 0, 5, 10, 6, 1, 0, 0, 2,
]


def _rainbook(add_chunk, add_claim, entity) -> None:
    station = entity("Cape Sorrel Weather Station", None)
    river = entity("Sorrel River", None)
    per_page = 6
    for page in range(len(RAIN_MM) // per_page):
        lines, claims = [], []
        for i in range(page * per_page, (page + 1) * per_page):
            day, month = (i + 1, "October") if i < 31 else (i - 30, "November")
            mm, wind = RAIN_MM[i], WINDS[(i * 3) % len(WINDS)]
            if mm == 0:
                text = f"On {day} {month} 1998 the Cape Sorrel station logged a dry day with {wind} winds."
                obj = None
            elif mm >= 30:
                text = (f"On {day} {month} 1998 the Cape Sorrel station logged {mm} mm of rain "
                        f"with {wind} gales, and the Sorrel River rose at the upstream gauge.")
                obj = river
            else:
                text = f"On {day} {month} 1998 the Cape Sorrel station logged {mm} mm of rain with {wind} winds."
                obj = None
            lines.append(text)
            claims.append((station, obj, text))
        chunk = add_chunk("rainbook", f"Rain book, autumn 1998, sheet {page + 1}. " + " ".join(lines))
        for subject, obj, text in claims:
            add_claim(17, subject, obj, chunk, text)


# -- harbor-city: the Marrowick Chronicle (summary of community 4) -------------------------

STREETS = ["Rope Walk", "Tanner's Lane", "Quay Street", "Chandler Row", "Gull Steps",
           "Harbor Parade", "Salt Yard", "Netmakers' Row"]
FISH = ["herring", "mackerel", "cod", "sole", "crab", "sprat"]
SMALL_BOATS = ["Wren", "Good Intent", "Little Dora", "Fair Wind", "Sea Pink", "Tern",
               "Brothers", "May Blossom", "Curlew"]
ORDINALS = ["second", "third", "fourth", "fifth", "sixth"]


def _era(year: int) -> dict[str, list[str]]:
    if year < 1900:
        return {"cargo": ["timber", "salt fish", "wool", "grain", "hides", "slate"],
                "vessel": ["schooner", "brig", "barque", "ketch"],
                "imports": ["tea", "sugar", "iron goods", "cloth"]}
    if year < 1965:
        return {"cargo": ["coal", "grain", "timber", "steel", "fertiliser", "wool"],
                "vessel": ["steamer", "coaster", "collier", "trawler"],
                "imports": ["motor parts", "oil", "sugar", "radio sets"]}
    return {"cargo": ["containers", "grain", "fuel oil", "farm machinery", "timber"],
            "vessel": ["container ship", "bulk carrier", "tanker", "trawler"],
            "imports": ["electronics", "machinery", "fuel", "fruit"]}


EVENTS = [
    "the harbor master counted {ships} vessels entering the Sorrel roads, most of them laden with {cargo}.",
    "a {wind} gale in {month} drove {n} fishing boats onto the Shingle Bank, and the Cape Sorrel lifeboat brought every crew ashore.",
    "the Eastgate Fish Market had its best {fish} season in a decade, and the auction ran past noon for a week.",
    "a fire in a chandler's store on {street} was put out by a bucket chain of dockworkers before it reached the warehouses.",
    "the City Council debated deepening the inner channel and, as in many earlier years, put off the decision.",
    "the {vessel} {boat} ran aground on the sandbar at the river mouth and was refloated on the next spring tide.",
    "a hard winter froze the upper Sorrel for {n} weeks, and barges from the inland towns could not reach the quays.",
    "Lantern Night was held in {weather} weather and the procession reached the Old Light well after dark.",
    "the Harbor Board raised the quay dues on {cargo}, and the merchants answered with a petition of {n} hundred signatures.",
    "a new warehouse of brick and slate went up on {street} to store {cargo}.",
    "the Customs House recorded more imports of {imports} and fewer exports of {cargo} than the year before.",
    "heavy autumn rain pushed the Sorrel over its banks in the meadows upstream, but the city quays stayed dry.",
    "the ferry across the Narrows carried about {ferry} thousand passengers, and the ferry company asked the council for a second boat.",
    "a boatbuilder on {street} launched the fishing boat {boat}, the {ordinal} built on that slip in the decade.",
    "sickness among the crews of two {vessel}s kept the port in quarantine for {n} days in {month}.",
    "the school on {street} opened a class in navigation for the children of fishing families.",
    "a shoal of {fish} came so close inshore in {month} that people filled baskets from the harbor steps.",
    "the harbor lamps along the quay were refitted, and crowds came out on the opening evening to see them lit.",
]

AFTERWORDS = [
    "Merchants' letters from that year speak of steady trade and full warehouses.",
    "The harbor log notes {n} days when fog closed the roads.",
    "The Old Light was repainted in red and white bands.",
    "A winter storm damaged the breakwater, which was patched in the spring.",
    "The fishing fleet numbered about {fleet} boats.",
    "Dock gangs worked double shifts through the autumn grain season.",
    "Several families left for the inland towns, where the mills paid better wages.",
    "The council minutes record a long argument about the cost of lighting the quays.",
    "Visitors from the southern suburbs still had to cross by ferry or take the long road inland.",
    "The river brought down more silt than usual, and the pilots moved their marks twice.",
    "A band played on the quay every Sunday afternoon through the summer.",
    "Rainfall at the river mouth was close to the long-term average.",
]

PEOPLE = ["Hester Vane", "Tobias Marl", "Ruth Ellery", "Samuel Tresk", "Nell Garrow",
          "Owen Brisk", "Clara Fenn", "Jacob Sallow"]
TRADES = ["sailmaker", "cooper", "ship's chandler", "netmaker", "baker", "harbor carpenter"]
NOTES = [
    "{person}, a {trade} on {street}, was elected to the Harbor Board.",
    "A new bell was hung in the tower of the Seamen's Chapel.",
    "The quay wall near the Old Light was raised by half a metre.",
    "The Eastgate auctioneers agreed to start the bidding an hour earlier in summer.",
    "A travelling circus pitched its tent on the open ground by the western berths.",
    "The ropewalk on Rope Walk took on {n} new apprentices.",
    "A sea wall was built to protect the cottages on Gull Steps from winter waves.",
    "The pilots lost a boat in a storm off the sandbar, though all hands were saved.",
    "{person} opened a reading room for seamen above a {trade}'s shop on {street}.",
]

MILESTONES = {
    1820: "The first stone quay was finished along the inner basin, replacing the timber wharves of the old fishing village.",
    1841: "Fish auctions moved to a covered stand on the Eastgate quay, the beginning of the Eastgate Fish Market.",
    1856: "The first steam tug arrived in Marrowick, and sailing ships no longer had to wait for a fair wind to enter the roads.",
    1873: "The granite Customs House was completed on the corner of Quay Street and Harbor Parade.",
    1893: "Fishing families carried lanterns along the quay to welcome the fleet home, the first Lantern Night on record.",
    1902: "Two steam cranes were set up on the western berths, and gangs of porters were cut by half.",
    1911: "The Cape Sorrel weather station began its daily record of rainfall, wind and sea level.",
    1921: "Dockworkers' Local 14 was founded at a meeting in the net loft on Salt Yard.",
    1931: "A fire destroyed three warehouses on Chandler Row; the city bought its first motor fire engine.",
    1944: "Lantern Night was cancelled for the first time, as the harbor lay under blackout.",
    1956: "The western grain silos were built, and Northgate Freight began its regular bulk service.",
    1964: "Local 14 set up its pension fund, run by trustees elected from the members.",
    1974: "The tug Osprey joined the harbor fleet.",
    1979: "The Bluewater Container Terminal opened on land reclaimed north of the inner basin.",
    1987: "The nine-week dock strike closed the port; Ada Pellow signed the settlement on the sixty-third day.",
    1989: "An inspection of the East Levee reported soft ground and seepage near the inner basin.",
    1992: "A second inspection of the East Levee repeated the warnings of 1989.",
    1993: "The dredging contract with the Sorrel Dredging Company lapsed in a dispute over the silt.",
    1995: "The levee inspection recommended urgent repair with sheet piling; the work was tendered and withdrawn twice.",
    1998: "On 14 November a storm surge and a swollen river breached the East Levee; the flood damaged about 1,200 homes and closed the inner basin for eleven weeks, and Lantern Night was cancelled.",
    1999: "The Sorrel Flood Inquiry reported that neglected defences caused most of the flood damage, and the Harbor Infrastructure Trust was created.",
    2000: "The rebuilt Eastgate Fish Market reopened on raised piers, and dredging of the river channel resumed.",
    2002: "The rebuilt East Levee was completed with sheet piling along its whole length.",
    2003: "The Cape Sorrel station began sending automatic storm warnings to the harbor master.",
    2004: "A third berth was added to the Bluewater Container Terminal.",
    2009: "The tariff reform removed duties on most agricultural machinery imported through the Customs House.",
    2011: "The Narrows Bridge was approved, to be paid for by a state grant, toll bonds and the Harbor Infrastructure Trust.",
    2014: "The Narrows Bridge toll bonds were sold to pension funds and local investors.",
    2016: "Construction of the Narrows Bridge began on the southern bank.",
    2017: "The Bluewater terminal announced automated stacking cranes, and Local 14 opened talks over the jobs at stake.",
}


def chronicle(first: int = 1820, last: int = 2019) -> str:
    """One paragraph per year, from fixed tables indexed by arithmetic on the year."""
    paragraphs = [
        f"The Marrowick Chronicle records the life of the port year by year from {first} "
        f"to {last}, drawn from harbor logs, council minutes, union papers and the "
        "newspapers of the city."
    ]
    for year in range(first, last + 1):
        era = _era(year)
        slots: dict[str, Any] = {
            "ships": 40 + (year * 37) % 260,
            "cargo": era["cargo"][(year * 7) % len(era["cargo"])],
            "imports": era["imports"][(year * 5) % len(era["imports"])],
            "vessel": era["vessel"][(year * 3) % len(era["vessel"])],
            "wind": WINDS[(year * 11) % len(WINDS)],
            "month": MONTHS[(year * 5) % 12],
            "n": 2 + (year * 13) % 9,
            "fish": FISH[(year * 5) % len(FISH)],
            "street": STREETS[(year * 3) % len(STREETS)],
            "boat": SMALL_BOATS[(year * 7) % len(SMALL_BOATS)],
            "weather": ["clear", "wet", "windy", "mild", "frosty"][(year * 3) % 5],
            "ferry": 20 + (year * 17) % 90,
            "ordinal": ORDINALS[(year * 11) % len(ORDINALS)],
            "fleet": 60 + (year * 29) % 140,
            "person": PEOPLE[(year * 3) % len(PEOPLE)],
            "trade": TRADES[(year * 5) % len(TRADES)],
        }
        if year in MILESTONES:
            first_sentence = MILESTONES[year]
        else:
            event = EVENTS[(year * 7) % len(EVENTS)].format(**slots)
            first_sentence = event[0].upper() + event[1:]
        after = AFTERWORDS[(year * 5 + 3) % len(AFTERWORDS)].format(**slots)
        extra = ""
        if year % 2 == 0:
            extra += " " + NOTES[(year // 2 * 5) % len(NOTES)].format(**slots)
        if year >= 1911 and year % 3 == 0:
            extra += f" The Cape Sorrel station measured {700 + (year * 41) % 600} mm of rain over the year."
        paragraphs.append(f"{year}. {first_sentence} {after}{extra}")
    return "\n".join(paragraphs)


# -- tea-history-zh: caravan ledger (leaf 22) and export ledger (leaf 24) ------------------

LEADERS = ["赵德昌", "李恒兴", "杨家福", "和志清", "木春生", "段树林"]
STARTS = ["普洱", "思茅", "易武", "大理"]
VIAS = ["景东", "大理", "丽江", "鹤庆"]
DESTINATIONS = ["丽江", "中甸", "拉萨", "昌都"]
SEASONS = ["春", "夏", "秋", "冬"]
TEAS = ["武夷红茶", "工夫红茶", "松萝绿茶", "熙春绿茶", "白毫"]
BUYERS = ["英国东印度公司", "荷兰东印度公司", "瑞典东印度公司", "美国商船"]


def _caravans(add_chunk, add_claim, entity) -> None:
    per_page, entries = 5, 60
    for page in range(entries // per_page):
        lines, claims = [], []
        for i in range(page * per_page, (page + 1) * per_page):
            year = 1880 + i
            leader = LEADERS[(i * 5) % len(LEADERS)]
            start = STARTS[(i * 3) % len(STARTS)]
            via = VIAS[(i * 7) % len(VIAS)]
            mules = 30 + (i * 17) % 90
            loads = mules - (i * 7) % 20
            subject = entity(leader, "和顺号马帮的马锅头。")
            if i % 6 == 5:
                text = (f"{year}年{SEASONS[i % 4]}，马锅头{leader}率骡马{mules}匹自{start}出发，"
                        f"驮运普洱茶{loads}驮，目的地账上未记。")
                obj = None
            else:
                dest = DESTINATIONS[(i * 5 + 1) % len(DESTINATIONS)]
                text = (f"{year}年{SEASONS[i % 4]}，马锅头{leader}率骡马{mules}匹自{start}出发，"
                        f"驮运普洱茶{loads}驮，经{via}前往{dest}。")
                obj = entity(dest, "茶马古道上的城镇。")
            lines.append(text)
            claims.append((subject, obj, text))
        chunk = add_chunk("mabang", f"和顺号马帮账簿，第{page + 1}页：" + "".join(lines))
        for subject, obj, text in claims:
            add_claim(22, subject, obj, chunk, text)


def _exports(add_chunk, add_claim, entity) -> None:
    per_page, entries = 6, 48
    heshun = entity("和顺号", None)
    for page in range(entries // per_page):
        lines, claims = [], []
        for i in range(page * per_page, (page + 1) * per_page):
            year = 1760 + i
            # Black tea gains share over the years.
            tea = TEAS[0] if (i * 7) % 10 < 3 + i // 10 else TEAS[1 + (i * 3) % 4]
            amount = 120 + (i * 37) % 400 + i * 6
            if i % 5 == 2:
                text = f"{year}年，和顺号经广州口岸外销{tea}{amount}担，买方未记。"
                obj = None
            else:
                buyer = BUYERS[0] if i % 3 else BUYERS[1 + (i // 3) % 3]
                text = f"{year}年，和顺号经广州口岸外销{tea}{amount}担，售予{buyer}。"
                obj = entity(buyer, "在广州采购茶叶的外国商行。")
            lines.append(text)
            claims.append((heshun, obj, text))
        chunk = add_chunk("chukou", f"和顺号外销账册，第{page + 1}页：" + "".join(lines))
        for subject, obj, text in claims:
            add_claim(24, subject, obj, chunk, text)


GENERATORS = {
    "harbor-city": [_register, _rainbook],
    "tea-history-zh": [_caravans, _exports],
}
SUMMARY_GENERATORS = {"chronicle": chronicle}


# -- assembling rows -----------------------------------------------------------------------


def namespace_rows(ns: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The rows of one namespace, table by table, in a fixed order."""
    name = ns["name"]
    docs = {d["key"]: (f"{name}/doc/{i}", d["title"]) for i, d in enumerate(ns["documents"], 1)}
    chunks: list[dict[str, Any]] = []
    chunk_ids: dict[str, str] = {}
    entities: list[dict[str, Any]] = []
    entity_ids: dict[str, str] = {}  # key or name -> id
    claims: list[dict[str, Any]] = []
    chunk_doc: dict[str, str] = {}

    def add_chunk(doc_key: str, text: str, key: str | None = None) -> str:
        cid = f"{name}/chunk/{len(chunks) + 1}"
        chunks.append({"id": cid, "namespace": name, "parent_id": docs[doc_key][0],
                       "content": text})
        chunk_doc[cid] = docs[doc_key][0]
        if key is not None:
            chunk_ids[key] = cid
        return cid

    def entity(name_or_key: str, description: str | None) -> str:
        """The id of an entity by key or name, creating it (by name) if it is new."""
        if name_or_key in entity_ids:
            return entity_ids[name_or_key]
        eid = f"{name}/entity/{len(entities) + 1}"
        entities.append({"id": eid, "namespace": name, "name": name_or_key,
                         "description": description})
        entity_ids[name_or_key] = eid
        return eid

    def add_claim(leaf: int, subject: str, obj: str | None, chunk: str, text: str) -> None:
        claims.append({
            "id": f"{name}/claim/{len(claims) + 1}", "namespace": name,
            "subject_entity_id": subject, "object_entity_id": obj, "description": text,
            "source_parent_id": chunk_doc[chunk], "source_chunk_id": chunk,
            "community_summary_id": f"{name}/{leaf}",
        })

    for c in ns["chunks"]:
        add_chunk(c["doc"], c["text"], c["key"])
    for e in ns["entities"]:
        eid = entity(e["name"], e["description"])
        entity_ids[e["key"]] = eid
    names_by_id = {e["id"]: e["name"] for e in entities}

    by_n = {c["n"]: c for c in ns["communities"]}
    parents = {c["parent"] for c in ns["communities"] if c["parent"] is not None}

    def level(n: int) -> int:
        depth = 0
        while by_n[n]["parent"] is not None:
            n = by_n[n]["parent"]
            depth += 1
        return depth

    for cl in ns["claims"]:
        if cl["leaf"] in parents or cl["leaf"] not in by_n:
            raise ValueError(f"{name}: claim assigned to non-leaf {cl['leaf']}")
        add_claim(cl["leaf"], entity_ids[cl["s"]],
                  entity_ids[cl["o"]] if cl["o"] is not None else None,
                  chunk_ids[cl["chunk"]], cl["text"])
    for generate in GENERATORS.get(name, []):
        generate(add_chunk, add_claim, entity)

    communities = []
    for c in ns["communities"]:
        summary = c["summary"]
        if isinstance(summary, dict):
            summary = SUMMARY_GENERATORS[summary["generate"]]()
        communities.append({
            "id": f"{name}/{c['n']}", "namespace": name, "community_name": c["name"],
            "summary_content": summary, "level": level(c["n"]),
            "parent_community_id": f"{name}/{c['parent']}" if c["parent"] is not None else None,
            "members": json.dumps([names_by_id[entity_ids[m]] for m in c["members"]],
                                  ensure_ascii=False),
        })

    parents_rows = [
        {"id": doc_id, "namespace": name, "title": title,
         "content": "\n\n".join(ch["content"] for ch in chunks if ch["parent_id"] == doc_id)}
        for doc_id, title in docs.values()
    ]
    return {
        "rag_parents": parents_rows,
        "rag_children": chunks,
        "rag_entities": entities,
        "rag_community_summaries": communities,
        "rag_claims": claims,
    }


def build(output: Path = OUTPUT, source: Path = SOURCE) -> Path:
    """Write a fresh store at `output` (any old file is deleted first)."""
    data = json.loads(source.read_text(encoding="utf-8"))
    output = Path(output)
    output.unlink(missing_ok=True)
    with CommunityStore.create(output) as store:
        for ns in data["namespaces"]:
            for table, rows in namespace_rows(ns).items():
                store.insert(table, rows)
    return output


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else OUTPUT
    print(f"wrote {build(target)}")
