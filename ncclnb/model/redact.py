"""The one redaction policy: what counts as a secret in an environment
variable or a log line, and what replaces it.

A snapshot (``ncclnb collect``, ``ncclnb ingest``) and a diagnosis
(``ncclnb doctor``) must be safe to paste in a public issue, so both call
this module; no other module holds a secret pattern. Pure: the standard
library only, no other layer of ncclnb.

Two questions, two functions:

* :func:`redact_value` (``name``, ``value``): the value an environment
  variable is stored with. A secret *name* hides the whole value; any other
  value is :func:`scrub`-bed.
* :func:`scrub` (free text): the same text with only the secret parts
  replaced by ``<redacted>``, so a log line stays readable
  (``https://alice:<redacted>@head:29500``, ``Authorization: Bearer <redacted>``).

Secret names (:func:`is_secret_name`, case-insensitive): names containing
TOKEN, SECRET, PASSWORD, PASSWD, PASSPHRASE, CREDENTIAL, CREDS, COOKIE,
SESSION, PRIVATE, SIGNATURE or APIKEY; a word AUTH (OAUTH, AUTHORIZATION,
AUTHENTICATION, not AUTHOR); a word PASS (``REDIS_PASS``, not
``NCCL_BYPASS``); a word PWD in a name of more than one word (``DB_PWD``,
``MYSQL_PWD``: ``PWD`` and ``OLDPWD`` are the shell's current and previous
directories, paths, and stay). A word KEY or KEYS (``SSH_KEY``,
``WANDB_API_KEY``) is a secret except in the diagnostic families
(``NCCL_``, ``TORCH_``, ``CUDA_``, ...), where it names a setting
(``NCCL_IB_PKEY``, an InfiniBand partition key), unless the KEY follows API,
ACCESS, SECRET, PRIVATE, SIGNING, ENCRYPTION or AUTH. A setting of those
families whose *value* looks like a secret is still scrubbed.

Secret values, under any name (:func:`scrub`): the password of
``scheme://user:password@host`` and of a scheme-less ``user:password@host``
(the password may hold ``/`` and ``@``: it runs to the last ``@`` of the
word); query parameters ``?token=``, ``&key=``, ``&sig=``, ``X-Amz-Signature``
and their kin; ``NAME=value`` and ``"NAME": "value"`` where NAME is a secret
name (in free text a bare ``key`` is not: stores and dicts print it); the
body of PEM private-key blocks; ``Bearer``/``Basic`` credentials; and
tokens known by their shape: Hugging Face ``hf_``, GitHub ``ghp_``/``gho_``/
``ghu_``/``ghs_``/``ghr_``/``github_pat_``, GitLab ``glpat-``, AWS access
key ids ``AKIA``/``ASIA``, Google API keys ``AIza``, JWTs ``eyJ...``,
OpenAI/Anthropic-style ``sk-``, Stripe ``sk_live_``, Slack ``xox[abposr]-``,
npm ``npm_``.

Limits: a PEM body printed on lines of its own (without its BEGIN line on
the same text) is plain base64 and cannot be told from data; a token with
no known shape under an innocent name passes.
"""

from __future__ import annotations

import re
from typing import Mapping

REDACTED = "<redacted>"

# families whose variables are settings to diagnose (a KEY there is a setting)
DIAGNOSTIC_PREFIXES = ("NCCL_", "TORCH_", "TORCHELASTIC_", "CUDA_", "GLOO_", "FI_", "NVIDIA_", "UCX_", "OMPI_", "PMIX_", "SLURM_")

_STRONG = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|CREDS|COOKIE|SESSION|PRIVATE|SIGNATURE|APIKEY")
_AUTH_WORD = re.compile(r"(?:O?AUTH[NZ]?|AUTHORI[SZ]ATION|AUTHENTICATION|AUTHTOKEN)")
_KEY_OWNERS = frozenset({"API", "ACCESS", "SECRET", "PRIVATE", "SIGNING", "ENCRYPTION", "AUTH", "SSH", "DEPLOY"})
_WORDS = re.compile(r"[A-Z0-9]+")


def is_secret_name(name: str) -> bool:
    """True when a variable or field called ``name`` holds a credential
    (``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``DB_PWD``, ``SSH_KEY``) and
    False for settings and paths (``NCCL_IB_PKEY``, ``PWD``, ``OLDPWD``)."""
    upper = name.upper()
    if _STRONG.search(upper):
        return True
    words = _WORDS.findall(upper)
    if not words:
        return False
    for i, word in enumerate(words):
        if word == "PASS" or _AUTH_WORD.fullmatch(word):
            return True
        if word == "PWD" and len(words) > 1:
            return True
        if word in ("KEY", "KEYS"):
            if i and words[i - 1] in _KEY_OWNERS:
                return True
            if not upper.startswith(DIAGNOSTIC_PREFIXES):
                return True
    return False


def _free_text_secret_name(name: str) -> bool:
    """:func:`is_secret_name` for a ``name=value`` inside free text, where a
    bare ``key`` is a store key or a dict key, not a credential."""
    words = _WORDS.findall(name.upper())
    if len(words) == 1 and words[0] in ("KEY", "KEYS"):
        return False
    return is_secret_name(name)


# ---- value patterns (each replaces only the secret part) ---------------------
_PEM = re.compile(
    r"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)(.*?)(-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)", re.S
)
_SCHEME = r"[A-Za-z][A-Za-z0-9+.\-]*://"
# Every repeat below is bounded (a name of at most 128 characters, a password
# of at most 256): a line of 64 KiB built to make a pattern backtrack costs
# linear time, not minutes. A longer password passes unredacted.
#
# scheme://user:password@host; the password runs to the last '@' of the word
# (it may hold '/' and '@') but never into a second URL; "host:8080/x@y" is a
# port, not a password
_URL_USERINFO = re.compile(
    rf"(?P<head>\b{_SCHEME}[^\s:/@]{{0,128}}):(?!\d+(?:[/?#]|$))(?P<pw>(?:(?!{_SCHEME})\S){{1,256}})@(?=[^\s@])"
)
# user:password@host without a scheme (MASTER_URI=alice:s3cr3t@10.0.0.1:29500);
# not inside a URL, not C++ scope (a::b@), not a port (host:8080/x@y)
_USERINFO = re.compile(
    r"(?P<head>(?<![\w.~%+\-:/@])[A-Za-z0-9._~%+\-]{1,128}):(?![:/])(?!\d+(?:[/?#]|$))(?P<pw>\S{1,256})@"
    r"(?=[A-Za-z0-9\[])"
)
_QUERY = re.compile(
    r"(?P<head>[?&;](?:[A-Za-z0-9_.\-]{0,64}?)(?i:token|key|sig|signature|secret|passw(?:or)?d|pwd|pass|auth"
    r"|credential|session|code|apikey)[A-Za-z0-9_.\-]{0,64}=)(?P<pw>(?!<redacted>)[^&#\s\"'<>]+)"
)
# NAME=value, NAME: value, "NAME": "value", 'NAME'='value' in free text, for
# names that may be secret (the callback asks is_secret_name)
_NAME_HINT = r"(?=[A-Za-z0-9_.\-]{0,96}?(?i:token|secret|pass|pwd|cred|cookie|session|private|signature|key|auth))"
_ASSIGN = re.compile(
    rf"(?P<head>(?<![\w.\-])(?P<q>[\"']?){_NAME_HINT}(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{{0,127}})(?P=q)[ \t]*"
    r"(?:=|:(?!//))[ \t]*(?P<vq>[\"'])?)"
    r"(?P<pw>(?!<redacted>)(?!(?i:bearer|basic|token|digest)[ \t])(?(vq)[^\"'\n]+|[^\s\"'&]+))"
)
# --password hunter2, --token=abc (a command line echoed in a log)
_FLAG = re.compile(
    rf"(?P<head>(?<!\S)--?{_NAME_HINT}(?P<name>[A-Za-z][A-Za-z0-9_\-]{{0,127}})(?:[ \t]+|=))"
    r"(?P<pw>(?!<redacted>)[^\s\-]\S*)"
)
# Bearer <token>; Authorization: Basic|Token|Digest <credentials>
_AUTH_SCHEME = re.compile(
    r"(?P<head>\b(?i:bearer)[ \t]+|\b(?i:authorization)[\"']?[ \t]*[:=][ \t]*[\"']?(?i:basic|token|digest)[ \t]+)"
    r"(?P<pw>(?!<redacted>)[A-Za-z0-9\-._~+/]{8,}=*)"
)
_SHAPED = re.compile(
    r"(?<![A-Za-z0-9_\-])(?:"
    r"hf_[A-Za-z0-9]{16,}"  # Hugging Face
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"  # GitHub
    r"|glpat-[A-Za-z0-9_\-]{20,}"  # GitLab
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Za-z])"  # AWS access key id
    r"|AIza[0-9A-Za-z_\-]{35}"  # Google API key
    r"|eyJ[A-Za-z0-9_\-]+\.eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]*"  # JWT
    r"|sk-[A-Za-z0-9_\-]{20,}|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"  # OpenAI/Anthropic, Stripe
    r"|xox[abposr]-[A-Za-z0-9\-]{10,}"  # Slack
    r"|npm_[A-Za-z0-9]{36}"  # npm
    r")"
)
# cheap gates (substring tests on the lowered text, in C): a pattern runs only
# where its gate shows; most log lines pass none but the first
_NAME_HINTS = ("token", "secret", "pass", "pwd", "cred", "cookie", "session", "private", "signature", "key", "auth")
_SHAPE_HINTS = (
    "hf_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "akia",
    "asia",
    "aiza",
    "eyj",
    "sk-",
    "sk_",
    "rk_",
    "xox",
    "npm_",
)
_SCHEME_HINTS = ("bearer", "authorization")
_ANY_HINT = ("@", "-----begin") + _NAME_HINTS + _SHAPE_HINTS + _SCHEME_HINTS


def _keep_head(m: re.Match) -> str:
    return m.group("head") + REDACTED


def _assign(m: re.Match) -> str:
    if not _free_text_secret_name(m.group("name")):
        return m.group(0)
    return m.group("head") + REDACTED


def scrub(text: str) -> str:
    """``text`` with every secret part (see the module's doc) replaced by
    ``<redacted>``; the rest of the text is unchanged. Idempotent."""
    if not text:
        return text
    low = text.lower()
    for hint in _ANY_HINT:  # the common case: a line with no hint at all, in one pass
        if hint in low:
            break
    else:
        return text
    if "-----begin" in low:
        text = _PEM.sub(lambda m: m.group(1) + REDACTED + m.group(3), text)
    if "@" in text:
        if "://" in text:
            text = _URL_USERINFO.sub(lambda m: f"{m.group('head')}:{REDACTED}@", text)
        text = _USERINFO.sub(lambda m: f"{m.group('head')}:{REDACTED}@", text)
    if any(h in low for h in _SCHEME_HINTS):
        text = _AUTH_SCHEME.sub(_keep_head, text)
    if any(h in low for h in _NAME_HINTS):
        if "?" in text or "&" in text or ";" in text:
            text = _QUERY.sub(_keep_head, text)
        if "=" in text or ":" in text:
            text = _ASSIGN.sub(_assign, text)
        if "-" in text:
            text = _FLAG.sub(_assign, text)
    if any(h in low for h in _SHAPE_HINTS):
        text = _SHAPED.sub(REDACTED, text)
    return text


# how far past a cut a secret that starts before it can reach (a name of 128
# characters, a password of 256 and the '@' after it)
_REACH = 512


def scrub_cut(text: str, limit: int) -> str:
    """``scrub(text)[:limit]``, reading at most ``limit`` + 512 characters:
    what a text cut to ``limit`` shows, scrubbed before the cut (a token
    across the cut leaves none of its characters) and at a bounded cost
    however long the line."""
    return scrub(text[: limit + _REACH])[:limit]


def redact_value(name: str, value: str) -> str:
    """The value to store for an environment variable: ``"<redacted>"`` for
    a secret name, else ``value`` with its secret parts scrubbed."""
    if is_secret_name(name):
        return REDACTED
    return scrub(value)


def redact_mapping(environ: Mapping[str, str]) -> dict[str, str]:
    """Every variable of ``environ``, redacted (see :func:`redact_value`)."""
    return {str(k): redact_value(str(k), str(v)) for k, v in environ.items()}
