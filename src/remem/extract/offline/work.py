"""Offline rules about a speaker's work: occupation and employer (or school).

Pure functions of one normalised clause, run in order by
`remem.extract.offline.rules.RULES`: "I work as a nurse at St Mary's", "I'm a
software engineer", "I'm retired", "I got laid off".
"""

from __future__ import annotations

import re

from remem.extract.offline.fact import Fact
from remem.extract.offline.person import third_person
from remem.extract.offline.text import (
    ADV,
    MAX_VALUE,
    TRAIL,
    cut,
    is_pronoun_thing,
    singular,
    strip_articles,
    thing,
)
from remem.model import Kind, Sensitivity

__all__ = ["rule_work"]

_I = re.IGNORECASE
_PERSONAL = Sensitivity.PERSONAL


_OCCUPATIONS = frozenset(
    "nurse doctor physician surgeon dentist pharmacist teacher professor lecturer tutor student "
    "researcher scientist engineer developer programmer designer architect lawyer attorney "
    "solicitor barrister paralegal judge accountant auditor banker analyst consultant manager "
    "director executive ceo cto cfo coo founder cofounder co-founder entrepreneur writer author "
    "journalist editor reporter photographer artist painter musician singer actor actress dancer "
    "chef cook baker waiter waitress bartender barista pilot driver mechanic electrician plumber "
    "carpenter builder farmer firefighter paramedic officer soldier sailor librarian cashier clerk "
    "receptionist secretary assistant administrator technician therapist psychologist "
    "psychiatrist counselor counsellor worker vet veterinarian midwife caregiver carer nanny "
    "cleaner janitor salesperson realtor agent broker trader investor economist statistician "
    "mathematician physicist chemist biologist translator interpreter freelancer contractor intern "
    "apprentice retiree housewife homemaker pastor priest rabbi imam coach trainer instructor "
    "principal postdoc tester sysadmin optician optometrist surveyor dietitian nutritionist "
    "radiologist anesthesiologist pediatrician paediatrician cardiologist clinician hairdresser "
    "barber tailor florist butcher fisherman welder machinist courier postman lifeguard guard "
    "detective politician diplomat officer pharmacologist epidemiologist".split()
)
_OCCUPATION_SUFFIXES = (
    "engineer", "developer", "designer", "manager", "writer", "scientist", "analyst", "worker",
    "officer", "specialist", "technician", "consultant", "teacher", "therapist", "ologist",
    "grapher", "keeper", "smith", "maker", "director", "nurse", "doctor",
)  # fmt: skip
_NOT_EMPLOYERS = frozenset(
    "home night nights weekends the weekend the moment myself remote remotely".split()
)
_JOB_VERB = (
    rf"I\s+{ADV}(?:work|am\s+{ADV}working|have\s+{ADV}been\s+working|(?:got|found|landed"
    r"|accepted|started|have|took)\s+a\s+(?:new\s+)?job|am\s+employed|was\s+hired|got\s+hired)"
)


# a word that makes "a <word> cook" a judgement of how one does a thing, not a job: "I'm a
# great cook", "a terrible driver", "a keen baker" (a plain fact then, on no field)
_JUDGED = frozenset(
    "good great decent fine fantastic amazing excellent brilliant superb awesome wonderful "
    "better best bad terrible awful horrible lousy poor rubbish hopeless useless worse worst "
    "keen avid enthusiastic passionate natural born confident nervous careful careless safe "
    "slow fast quick messy neat picky fussy competent lazy reluctant proud huge big "
    "massive total complete".split()
)


def _judged(job: str) -> bool:
    """Whether `job` judges how well or how keenly one does a thing ("great cook")."""
    return bool(_JUDGED.intersection(job.lower().split()[:-1]))


def _is_occupation(job: str) -> bool:
    words = job.lower().split()
    if not 1 <= len(words) <= 4:
        return False
    head = singular(words[-1])
    return head in _OCCUPATIONS or head.endswith(_OCCUPATION_SUFFIXES)


def _split_job(text: str) -> tuple[str, str | None]:
    """ "software engineer at Google" -> ("software engineer", "Google")."""
    parts = re.split(r"\s+(at|for|with|in|from|since|on)\s+", text, maxsplit=1, flags=_I)
    job = thing(parts[0])
    employer = None
    if len(parts) == 3 and parts[1].lower() in ("at", "for", "with"):
        employer = strip_articles(cut(parts[2])) or None
    if employer and parts[1].lower() == "with" and not employer[:1].isupper():
        employer = None  # "a nurse with the NHS", not "a developer with ten years' experience"
    return job, employer


def _work_facts(s: str, job: str | None, employer: str | None, change: bool) -> list[Fact]:
    facts: list[Fact] = []
    text = third_person(s)
    if job:
        facts.append(Fact(text, Kind.SEMANTIC, "occupation", job, _PERSONAL, change))
    if employer and employer.lower() not in _NOT_EMPLOYERS:
        field, verb = ("school", "Studies") if job == "student" else ("employer", "Works")
        said = re.search(rf"(?:(?:a|an|the)\s+)?{re.escape(employer)}", s, _I)
        emp_text = f"{verb} at {said.group(0) if said else employer}" if job else text
        value = employer[:MAX_VALUE]
        facts.append(Fact(emp_text, Kind.SEMANTIC, field, value, _PERSONAL, change))
    return facts


def rule_work(s: str) -> list[Fact]:
    change = re.search(r"\b(?:new|got|found|landed|accepted|started|became|become|hired)\b", s, _I)
    if m := re.fullmatch(_JOB_VERB + r"\s+as\s+(?:a\s+|an\s+)?(?P<rest>.+)", s, _I):
        return _work_facts(s, *_split_job(m["rest"]), change=change is not None)
    if m := re.fullmatch(_JOB_VERB + r"\s+with\s+(?P<who>\S.*)", s, _I):
        # "I'm working with a charity / my brother on ...": whom they work with, not for
        return [] if is_pronoun_thing(m["who"]) else [Fact(third_person(s), Kind.SEMANTIC)]
    if m := re.fullmatch(_JOB_VERB + r"\s+(?:at|for|by)\s+(?P<emp>.+)", s, _I):
        emp = strip_articles(cut(m["emp"]))
        if emp.lower() == "myself":
            return _work_facts(s, "self-employed", None, change=False)
        return _work_facts(s, None, emp or None, change=change is not None)
    if m := re.fullmatch(
        rf"I\s+(?:am|have\s+become|became|have\s+just\s+become)\s+{ADV}(?P<neg>not\s+|no\s+longer\s+)?"
        rf"{ADV}(?:a|an)\s+(?P<rest>.+)",
        s,
        _I,
    ):
        job, employer = _split_job(m["rest"])
        if not _is_occupation(job):
            return []
        if _judged(job):  # "I'm a great cook": a skill, said on no field
            return [Fact(third_person(s), Kind.SEMANTIC)]
        if m["neg"]:
            return _work_facts(s, f"not {job}", None, change=False)
        return _work_facts(s, job, employer, change=change is not None)
    if m := re.fullmatch(
        rf"I\s+am\s+{ADV}(?P<neg>not\s+|no\s+longer\s+)?{ADV}(?P<job>retired|unemployed"
        rf"|self-employed|freelancing|between\s+jobs|out\s+of\s+work|jobless){TRAIL}",
        s,
        _I,
    ):
        job = m["job"].lower().replace("freelancing", "freelancer")
        return _work_facts(s, f"not {job}" if m["neg"] else job, None, change=False)
    if m := re.fullmatch(
        rf"I\s+(?:have\s+)?{ADV}(?P<ev>retired|quit\s+my\s+job|lost\s+my\s+job|got\s+laid\s+off"
        r"|was\s+laid\s+off|been\s+laid\s+off|got\s+fired|was\s+fired)(?:\s+.*)?",
        s,
        _I,
    ):
        job = "retired" if m["ev"].lower() == "retired" else "unemployed"
        return _work_facts(s, job, None, change=True)
    return []
