"""The common injection phrases in German, French, Spanish, Italian, Portuguese and Dutch,
for `remem.policy.untrusted`: "ignore the previous instructions", "forget your
instructions", "you are now an (unrestricted) assistant", "new instructions:", and the
system prompt named in each.

Narrower than the English list on purpose: "you are now" counts only before an
assistant, a bot, a mode or "without restrictions" ("Du bist jetzt 30", "Tu es
maintenant à Paris ?" stay unflagged), and "forget your ..." only before instructions
or rules ("Vergeet je paraplu niet" stays). Accents may be left out ("instrucoes",
"precedentes"). Read case-insensitively after NFKC.
"""

from __future__ import annotations

_E = "[eé]"
_A = "[aá]"
# an assistant, a bot, a mode, or free of its rules: what "you are now ..." must name
_BOT = (
    r"(?:assistent|assistant|asistente|assistente|ki|ia|i\.a\.|ai|bot|chatbot|modell|model"
    r"|modelo|modello|modèle)"
)
_FREE = (
    r"(?:uneingeschränkt\w*|unzensiert\w*|sans\s+(?:restrictions?|limites?|filtres?)"
    r"|sin\s+(?:restricciones|l[ií]mites|filtros)|senza\s+(?:restrizioni|limiti|filtri)"
    r"|sem\s+(?:restri[cç][oõ]es|limites|filtros)|zonder\s+(?:beperkingen|grenzen|filters))"
)
_NOW_A = rf"(?:\w+\s+){{0,2}}?(?:{_BOT}\b|{_FREE})"

PHRASES: tuple[str, ...] = (
    # German
    r"\bignorier(?:e|en|t)?\s+(?:sie\s+)?(?:bitte\s+)?(?:alle\s+|s[äa]mtliche\s+)?"
    r"(?:(?:die|deine|ihre)\s+)?(?:vorherigen?|bisherigen?|vorigen?|fr[üu]heren?|obigen?"
    r"|vorangegangenen?|alten)\s+(?:anweisung(?:en)?|instruktion(?:en)?|befehle|regeln"
    r"|vorgaben|anordnungen)\b",
    r"\b(?:vergiss|vergessen\s+sie)\s+(?:alle\s+)?(?:deine|ihre|die\s+(?:vorherigen|bisherigen))"
    r"\s+(?:anweisungen|instruktionen|regeln|vorgaben|befehle)\b",
    rf"\b(?:du\s+bist|sie\s+sind)\s+(?:jetzt|nun|ab\s+sofort|ab\s+jetzt)\s+(?:(?:ein|eine|kein"
    rf"|keine)\s+{_NOW_A}|{_FREE}|im\s+\w*modus\b|dan\b)",
    r"\bneue\s+(?:system)?(?:anweisungen|instruktionen|befehle)\s*:",
    r"\bsystem-?(?:prompts?|anweisung(?:en)?)\b",
    # French
    rf"\bignore[rz]?\s+(?:toutes\s+|tous\s+)?(?:les\s+|tes\s+|vos\s+)?(?:instructions|consignes"
    rf"|r[èe]gles|directives|ordres)\s+(?:pr{_E}c{_E}dentes|ant{_E}rieures|ci-dessus"
    rf"|initiales|d'avant)\b",
    rf"\boublie[rz]?\s+(?:toutes\s+)?(?:(?:tes|vos)\s+(?:instructions|consignes|r[èe]gles"
    rf"|directives)|les\s+(?:instructions|consignes)\s+(?:pr{_E}c{_E}dentes|ant{_E}rieures))\b",
    rf"\b(?:tu\s+es|vous\s+[êe]tes)\s+(?:maintenant|d{_E}sormais|dor{_E}navant)\s+(?:(?:un|une)\s+"
    rf"{_NOW_A}|{_FREE}|en\s+mode\s+\w+)",
    r"\bnouvelles?\s+(?:instructions|consignes|directives)\s*:",
    r"\bprompt\s+(?:du\s+)?syst[èe]me\b",
    # Spanish
    r"\bignor(?:a|e|ar|en)\s+(?:todas\s+)?(?:las\s+|tus\s+|sus\s+)?(?:instrucciones|indicaciones"
    r"|reglas|[óo]rdenes|directrices)\s+(?:anteriores|previas|de\s+arriba|iniciales)\b",
    r"\bolvid(?:a|e|ar)\s+(?:todas\s+)?(?:(?:tus|sus)\s+(?:instrucciones|reglas|indicaciones"
    r"|directrices)|las\s+(?:instrucciones|indicaciones)\s+(?:anteriores|previas))\b",
    rf"\b(?:ahora\s+eres|eres\s+ahora|ahora\s+es\s+usted|a\s+partir\s+de\s+ahora\s+eres)\s+"
    rf"(?:(?:un|una)\s+{_NOW_A}|{_FREE}|en\s+modo\s+\w+)",
    r"\bnuevas\s+(?:instrucciones|indicaciones|[óo]rdenes|directrices)\s*:",
    r"\bprompt\s+del\s+sistema\b",
    # Italian
    r"\bignora(?:re)?\s+(?:tutte\s+)?(?:le\s+)?(?:tue\s+)?(?:istruzioni|indicazioni|regole"
    r"|direttive)\s+(?:precedenti|sopra|iniziali)\b",
    r"\bdimentica(?:re)?\s+(?:tutte\s+)?(?:(?:le\s+)?(?:tue|sue)\s+(?:istruzioni|regole"
    r"|indicazioni|direttive)|le\s+istruzioni\s+precedenti)\b",
    rf"\b(?:(?:ora|adesso|da\s+ora\s+in\s+poi),?\s+sei|sei\s+ora)\s+(?:(?:un|una|uno)\s+{_NOW_A}"
    rf"|{_FREE}|in\s+modalit{_A}\s+\w+)",
    r"\bnuove\s+(?:istruzioni|indicazioni|direttive)\s*:",
    r"\bprompt\s+di\s+sistema\b",
    # Portuguese
    r"\bignor(?:e|a|ar)\s+(?:todas\s+)?(?:as\s+)?(?:suas\s+|tuas\s+)?(?:instru[çc][õo]es|regras"
    r"|orienta[çc][õo]es|diretrizes)\s+(?:anteriores|pr[ée]vias|acima|iniciais)\b",
    r"\besque[çc](?:a|e|er)\s+(?:todas\s+)?(?:as\s+)?(?:suas|tuas)\s+(?:instru[çc][õo]es|regras"
    r"|orienta[çc][õo]es|diretrizes)\b",
    rf"\b(?:agora\s+(?:voc[êe]|tu)\s+(?:[ée]|[ée]s)|voc[êe]\s+agora\s+[ée])\s+(?:(?:um|uma)\s+"
    rf"{_NOW_A}|{_FREE}|em\s+modo\s+\w+)",
    r"\bnovas\s+(?:instru[çc][õo]es|orienta[çc][õo]es|diretrizes)\s*:",
    r"\bprompt\s+do\s+sistema\b",
    # Dutch
    r"\bnegeer\s+(?:alle\s+)?(?:de\s+|je\s+|jouw\s+|uw\s+)?(?:eerdere|vorige|voorgaande"
    r"|bovenstaande|oude|oorspronkelijke)\s+(?:instructies|opdrachten|regels|aanwijzingen)\b",
    r"\bvergeet\s+(?:alle\s+)?(?:je|jouw|uw|de\s+(?:eerdere|vorige))\s+(?:instructies|regels"
    r"|opdrachten|aanwijzingen)\b",
    rf"\b(?:je|jij|u)\s+(?:bent|ben)\s+nu\s+(?:een\s+{_NOW_A}|{_FREE}|in\s+\w+modus\b)",
    r"\bnieuwe\s+(?:instructies|opdrachten|aanwijzingen)\s*:",
    r"\bsysteemprompt\b",
)
