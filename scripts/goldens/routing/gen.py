#!/usr/bin/env python3
"""Routing and language-detection goldens from upstream's own pure-Python code.

Runs upstream's laya/lang.py (analyse) and laya/router.py (Router._route) on a wide, generated
set of states and language codes, and writes what they return:

    testdata/router/route.json   model, reason and detection per state (and per lang code)
    lang/testdata/analyse.json   analyse(state) per state

Upstream's code is not part of this repository. By default it is downloaded at run time:

    lang.py    tgundhus/laya@2d0be4e9ab5fbbca07aeca0f4ef5aa81fe3a0f8b  (mirrors NandhaKishorM/laya 0.3.29)
    router.py  NandhaKishorM/laya@cc61b5fdda2663804c4fbd4e123ff202249cb0d6

or read from a directory holding laya/lang.py and laya/router.py (--upstream DIR). Routing needs
neither torch nor transformers: router.py's hook and loading imports are replaced by stubs
(laya/hooks.py below), which the routing decision never calls.

    python3 scripts/goldens/routing/gen.py [--upstream DIR]
"""
import argparse
import json
import os
import sys
import tempfile
import urllib.request

LANG_URL = "https://raw.githubusercontent.com/tgundhus/laya/2d0be4e9ab5fbbca07aeca0f4ef5aa81fe3a0f8b/laya/lang.py"
ROUTER_URL = "https://raw.githubusercontent.com/NandhaKishorM/laya/cc61b5fdda2663804c4fbd4e123ff202249cb0d6/laya/router.py"

# router.py imports these from .hooks; routing decisions never call them.
HOOKS_STUB = '''
import contextvars
_SKIP_DEFAULTS = contextvars.ContextVar("skip", default=False)
class HookRegistry: pass
class PredictContext:
    def __init__(self, **kw): self.__dict__.update(kw)
def aggregate_usage(results): return {}
def compose_hooks(*a): return []
def dispatch(*a, **k): return None
def normalise_hooks(*a): return []
def validate_timeout(t): return t
'''


def load_upstream(directory):
    if directory is None:
        directory = tempfile.mkdtemp(prefix="laya-upstream-")
        os.makedirs(os.path.join(directory, "laya"))
        for url, name in ((LANG_URL, "lang.py"), (ROUTER_URL, "router.py")):
            with urllib.request.urlopen(url) as r, open(os.path.join(directory, "laya", name), "wb") as f:
                f.write(r.read())
    pkg = os.path.join(directory, "laya")
    if not os.path.exists(os.path.join(pkg, "hooks.py")):
        with open(os.path.join(pkg, "hooks.py"), "w") as f:
            f.write(HOOKS_STUB)
    # A bare package: upstream's __init__ imports torch.
    with open(os.path.join(pkg, "__init__.py"), "w") as f:
        f.write("")
    sys.path.insert(0, directory)
    from laya import lang, router  # noqa: E402
    return lang, router


ENGLISH = [
    "I was charged twice for my subscription this month, please refund the extra payment.",
    "The package arrived damaged and I would like a replacement as soon as possible.",
    "Can you tell me what the status of my order is?",
    "Please reset my password, I cannot log in to the dashboard.",
    "We have not received the invoice for March and the payment is due on Friday.",
    "The app crashes every time I open the settings page on my phone.",
    "do more, do less, do it again and do it now",
    "Come on, come back and come home with me, it is late.",
    "I'm not sure im going to make it, per the schedule it is plus two hours.",
    "Take care, take care of the todo list and the care plan for the dog.",
    "My son is in the hospital and I need to cancel the trip.",
]
LOANWORDS = [
    "I had a café au lait and the résumé was on the table.",
    "José sent the invoice to the team and it was paid on Monday.",
    "The naïve approach failed but the new one is working for us.",
    "Our piñata order is late and we need it for the party on Saturday.",
    "Please update the façade drawings, the résumé and the café menu.",
    "The entrée was cold and the crème brûlée was burnt.",
    "Ångström units are used in the spec for the coating thickness.",
]
FOREIGN = {
    "fr": ["Bonjour, je veux annuler mon abonnement parce que le service ne fonctionne pas.",
           "Je n'ai pas reçu ma commande et je voudrais savoir quand elle arrive.",
           "Bonjour je veux annuler mon abonnement pour le mois prochain merci"],
    "de": ["Mein Konto wurde zweimal belastet, bitte erstatten Sie mir den Betrag.",
           "Ich kann mich nicht anmelden, das Passwort wird nicht akzeptiert.",
           "reduzieren der helligkeit der lichter",
           "sag mir das HEUTIGE DATUM bitte jetzt"],
    "es": ["Hola, quiero cancelar mi pedido porque llegó dañado y necesito un reembolso.",
           "No puedo acceder a mi cuenta desde ayer, por favor ayúdenme.",
           "quiero cancelar mi PEDIDO POR FAVOR"],
    "pt": ["Olá, preciso de ajuda com a minha fatura, o valor está errado.",
           "Voce pode me mandar a nota fiscal?",
           "Deu erro 500 no endpoint de login depois do update",
           "Bom dia, preciso de ajuda com a minha conta"],
    "it": ["Buongiorno, vorrei sapere quando arriva il mio ordine, grazie.",
           "la fattura non è arrivata e devo pagare entro oggi"],
    "nl": ["Mijn pakket is niet aangekomen en ik wil graag mijn geld terug voor deze bestelling."],
    "sv": ["Jag behöver hjälp med min faktura, den är fel.",
           "Hej, jag har blivit debiterad två gånger och vill ha en återbetalning.",
           "kan inte logga in",
           "Jag kan inte logga in i appen",
           "Glömt lösenord",
           "Behöver kvitto",
           "Appen kraschar när jag öppnar inställningarna",
           "Jag behover hjalp med aterbetalning for min faktura",
           "Vi kan inte hitta paketet, kan ni skicka det igen?"],
    "da": ["Hej, jeg har brug for hjælp med min faktura, tak.",
           "Vi kommer om lidt, tak for hjælpen",
           "ja tak, det er fint med mig"],
    "no": ["Jeg trenger hjelp med fakturaen min, den er feil."],
    "ro": ["Bună ziua, vreau să anulez comanda pentru că nu a sosit până acum."],
    "bn": ["ami amar taka ferot chai, order ta ekhono ashe nai",
           "apnar service khub kharap, ami onek din dhore wait korchi"],
    "az": ["Salam, mən sifarişimi ləğv etmək istəyirəm, çünki gəlmədi."],
    "pl": ["Dzień dobry, moja przesyłka nie dotarła, proszę o zwrot pieniędzy."],
    "tr": ["Merhaba, siparişim gelmedi ve param iade edilmedi, lütfen yardım edin."],
    "cs": ["Dobrý den, moje objednávka nedorazila, prosím o vrácení peněz."],
    "hu": ["Jó napot, a rendelésem nem érkezett meg, kérem a pénzem visszatérítését."],
    "vi": ["Xin chào, tôi muốn hủy đơn hàng vì nó chưa được giao."],
    "tl": ["Magandang umaga, hindi pa dumarating ang order ko at gusto kong ma-refund."],
}
SCRIPTS = {
    "ru": "Здравствуйте, мой заказ не пришёл, верните деньги пожалуйста.",
    "zh": "你好，我的订单还没有到，请帮我退款。",
    "ja": "こんにちは、注文した商品がまだ届いていません。",
    "ko": "안녕하세요, 주문한 상품이 아직 도착하지 않았습니다.",
    "ar": "مرحبا، لم يصل طلبي بعد، أريد استرداد المال.",
    "hi": "नमस्ते, मेरा ऑर्डर अभी तक नहीं आया है, कृपया मदद करें।",
    "el": "Γεια σας, η παραγγελία μου δεν έχει φτάσει ακόμα.",
    "he": "שלום, ההזמנה שלי עדיין לא הגיעה.",
    "th": "สวัสดีครับ คำสั่งซื้อของฉันยังไม่มาถึง",
    "bn_script": "নমস্কার, আমার অর্ডার এখনো আসেনি।",
    "ta": "வணக்கம், எனது ஆர்டர் இன்னும் வரவில்லை.",
    "am": "ሰላም፣ ትዕዛዜ እስካሁን አልደረሰም።",
    "mn_trad": "ᠰᠠᠶᠢᠨ ᠪᠠᠶᠢᠨ᠎ᠠ ᠤᠤ",
}
ACRONYMS = [
    "MON DES EST LA",
    "STORES LOS ANGELES LAS VEGAS EL PASO CLOSED",
    "NYR MON TOR BOS DES EST PST LA SF",
    "COM DES LA EST NAV OS DOS",
    "ESA/UN OS/2 Nav/Com C:\\DOS\\mode",
    "WIE SPÄT IST ES IN KÖLN",
    "WIE SPAET IST ES IN KOELN",
    "ПРИВЕТ MON DES EST LA",
]
SHOUTED = [
    "OLÁ, PRECISO DE AJUDA COM A MINHA FATURA, O VALOR ESTÁ ERRADO",
    "BOM DIA, PRECISO DE AJUDA COM A MINHA CONTA PORQUE NAO CONSIGO ENTRAR",
    "QUIERO CANCELAR MI PEDIDO PORQUE NUNCA LLEGÓ",
    "JE VEUX ANNULER MON ABONNEMENT MAINTENANT",
    "MEIN KONTO WURDE ZWEIMAL BELASTET, BITTE ERSTATTEN",
    "THE PACKAGE ARRIVED DAMAGED AND I WANT A REFUND",
    "URGENT: PLEASE CALL ME BACK ABOUT THE INVOICE",
]
SHORT = ["", "   ", "12345", "Refund please", "the cat sat", "ok", "Quero cancelar",
         "Esqueci minha senha", "merci", "danke schön", "obrigado!", "A", "é",
         "Set α to 0.05 and β to 0.1", "Дмитрий Петрович Савицкий called about the order.",
         "github.com user@acme.com v1.2.3 U.S.A. os.path", "Influencer Tokyo 東京 tower trip"]
CODE = [
    "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n    os.path.join(a, b)\nTypeError: expected str",
    "round(el, 2) if non_english else os.path.join(x)",
    "x = la_fonction(le, les, des)  # pour tout",
]
CODES = ["en", "EN", "en-US", "en_US", "en_US.UTF-8", "eng", "English", "", "  ", "de", "pt-BR", "fr_FR.UTF-8",
         "C", "c", "POSIX", "C.UTF-8", "und", "zxx", "mul", "UND", "mul-Latn", "x-klingon", "sv_SE", "zh-Hant"]


def build_states():
    cases = []

    def add(name, state):
        cases.append({"name": name, "state": state})

    for i, t in enumerate(ENGLISH):
        add("english_%d" % i, t)
    for i, t in enumerate(LOANWORDS):
        add("loanword_%d" % i, t)
    for lg, texts in FOREIGN.items():
        for i, t in enumerate(texts):
            add("%s_%d" % (lg, i), t)
            add("%s_%d_upper" % (lg, i), t.upper())
            add("%s_%d_ticket" % (lg, i), {"subject": "Order problem", "body": t, "priority": 2})
            add("%s_%d_below_english" % (lg, i), ENGLISH[i % 6] + "\n" + ENGLISH[(i + 1) % 6] + "\n" + t)
            add("%s_%d_fields" % (lg, i), {"note": " ".join(ENGLISH[:6]), "message": t})
    for lg, t in SCRIPTS.items():
        add("script_%s" % lg, t)
        add("script_%s_in_english" % lg, ENGLISH[0] + " " + t)
        add("script_%s_field" % lg, {"agent": ENGLISH[1], "customer": t})
        add("script_%s_brand" % lg, "Order ORD-8812 for ACME Widget Pro " + t[:6])
    for i, t in enumerate(ACRONYMS):
        add("acronym_%d" % i, t)
        add("acronym_%d_under_english" % i, ENGLISH[0] + "\n" + t)
        add("acronym_%d_under_two" % i, ENGLISH[0] + "\n" + ENGLISH[1] + "\n" + t)
        add("acronym_%d_mixed_case" % i, "Tonight on the radio: " + t + " then the news.")
        add("acronym_%d_field" % i, {"teams": t, "note": ENGLISH[2]})
    for i, t in enumerate(SHOUTED):
        add("shouted_%d" % i, t)
        add("shouted_%d_with_english" % i, ENGLISH[3] + "\n" + t)
        add("shouted_%d_lowercase_tail" % i, t + " thanks")
    for i, t in enumerate(SHORT):
        add("short_%d" % i, t)
    for i, t in enumerate(CODE):
        add("code_%d" % i, t)
        add("code_%d_with_pt" % i, t + "\n" + FOREIGN["pt"][2])
    # Containers, depths and budgets.
    add("null", None)
    add("number", 12)
    add("list_turns", [{"role": "user", "content": FOREIGN["es"][0]}, {"role": "agent", "content": ENGLISH[0]}])
    add("list_turns_en", [{"role": "user", "content": ENGLISH[0]}, {"role": "agent", "content": ENGLISH[1]}])
    add("deep_7", {"a": [{"b": [{"c": [[FOREIGN["de"][0]]]}]}]})
    add("deep_6", {"a": [{"b": [{"c": [FOREIGN["de"][0]]}]}]})
    add("long_english_then_german", {"note": " ".join(ENGLISH[:6]) * 40, "message": FOREIGN["de"][0]})
    add("long_english_leaf_then_pt_line", (" ".join(ENGLISH[:6]) * 30) + "\n" + FOREIGN["pt"][0])
    add("long_one_token", "a" * 5000 + " " + FOREIGN["fr"][0])
    add("keys_ignored", {"subject of the message from the customer": "Bom dia, preciso de ajuda com a minha conta"})
    add("name_field", {"name": "José García", "message": ENGLISH[0]})
    add("name_field_ru", {"name": "Дмитрий Петрович", "message": ENGLISH[0]})
    add("mixed_lines_sv", "Order #4411\nJag behöver hjälp med min faktura, den är fel.\nThanks, the team")
    add("mixed_lines_en_only", "Order #4411\n" + ENGLISH[0] + "\nThanks, the team")
    add("two_leaves_fr", ["Hello there, thank you for the quick answer.", FOREIGN["fr"][1]])
    add("pt_unaccented_lines", "Subject: invoice\nnao consigo pagar a fatura, voce pode me ajudar?\nSent from my iPhone")
    add("tab_separated", "Hello\tthe order\tis late\tplease help")
    add("crlf_lines", ENGLISH[0] + "\r\n" + FOREIGN["it"][0])
    return cases


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--upstream", help="directory holding laya/lang.py and laya/router.py")
    ap.add_argument("--root", default=".", help="module root to write testdata under")
    args = ap.parse_args()
    lang, router = load_upstream(args.upstream)
    r = router.Router()
    analyse_cases, route_cases = [], []
    states = build_states()
    # The states already in the files (laya-mlx's earlier cases among them) are kept and
    # recomputed, so a case stays only with the answer upstream's current code gives.
    names = {c["name"] for c in states}
    changed = 0
    for path in ("lang/testdata/analyse.json", "testdata/router/route.json"):
        try:
            with open(os.path.join(args.root, path), encoding="utf-8") as f:
                old = json.load(f)
        except FileNotFoundError:
            continue
        for c in old:
            if "state" in c and "lang" not in c and "lang_guess" not in c and c["name"] not in names:
                names.add(c["name"])
                states.append({"name": c["name"], "state": c["state"]})
                w = c["want"].get("detection", c["want"])
                strip = lambda d: {k: v for k, v in d.items() if k != "mixed_segment"}
                if w is not None and strip(w) != strip(lang.analyse(c["state"])):
                    changed += 1
    print("earlier cases whose detection upstream now answers differently: %d" % changed)
    for c in states:
        det = lang.analyse(c["state"])
        analyse_cases.append({"name": c["name"], "state": c["state"], "want": det})
        d = r._route(c["state"], None)
        route_cases.append({"name": c["name"], "state": c["state"],
                            "want": {"model": d["model"], "reason": d["reason"], "detection": d["detection"]}})
    english = FOREIGN["de"][0]
    for code in CODES:
        resolved = router._english_from_code(code)
        route_cases.append({"name": "lang_code_%r" % code, "code": code, "want_english": resolved})
        d = r._route(english, None, lang=code)
        route_cases.append({"name": "lang_%r_german" % code, "state": english, "lang": code,
                            "want": {"model": d["model"], "reason": d["reason"], "detection": d["detection"]}})
        d = r._route(ENGLISH[0], None, lang_guess=lambda s, c=code: c)
        route_cases.append({"name": "lang_guess_%r_english" % code, "state": ENGLISH[0], "lang_guess": code,
                            "want": {"model": d["model"], "reason": d["reason"], "detection": d["detection"]}})
    for path, data in (("testdata/router/route.json", route_cases), ("lang/testdata/analyse.json", analyse_cases)):
        with open(os.path.join(args.root, path), "w", encoding="utf-8") as f:
            json.dump(data, f, ensure_ascii=False, indent=1)
            f.write("\n")
        print("%s: %d cases" % (path, len(data)))


if __name__ == "__main__":
    main()
