/* Lua patterns (Lua 5.4 manual §6.4.1) for string.find, match, gmatch and gsub, written for
   Baton from the manual so that a match can be stopped. Stock Lua's matcher runs inside one C
   call, where the count hook never fires: a pattern that backtracks exponentially ("a*" forty
   times against forty a's) or quadratically (".-=" over a 600 KB string) holds the thread for
   ever. This one counts its steps and, every STEP_BUDGET of them, asks baton_check_stop,
   which raises the run's or the task's stop once its deadline has passed (raising from here
   is safe: only C frames stand between this function and the lua_resume that catches it).

   What scripts see is what stock Lua does: the same results, the same errors with the same
   words, the same recursion limit ("pattern too complex"). */

#include "baton_shim.h"

#include <ctype.h>
#include <string.h>

#define MAX_CAPTURES 32       /* LUA_MAXCAPTURES */
#define MAX_DEPTH 200         /* nested matches before "pattern too complex", as stock Lua */
#define STEP_BUDGET 8192      /* steps between two looks at the clock */
#define CAP_OPEN (-1)         /* a capture whose ')' has not been reached */
#define CAP_POSITION (-2)     /* a () capture: its value is a position */
#define SPECIALS "^$*+?.([%-"

typedef struct Matcher {
    lua_State *L;
    const char *subject;      /* the subject's first byte */
    const char *subject_end;  /* one past its last */
    const char *pattern_end;
    int depth;                /* nested matches still allowed */
    int budget;               /* steps until the next look at the clock */
    int captures;             /* captures opened so far (finished or not) */
    struct {
        const char *start;
        ptrdiff_t length;     /* or CAP_OPEN, CAP_POSITION */
    } capture[MAX_CAPTURES];
} Matcher;

static inline unsigned char byte(const char *p) { return (unsigned char)*p; }

/* Counts `cost` steps; past the budget, stops the run if its time is up. */
static inline void spend(Matcher *m, size_t cost) {
    m->budget -= (int)(cost > STEP_BUDGET ? STEP_BUDGET : cost);
    if (m->budget <= 0) {
        m->budget = STEP_BUDGET;
        baton_check_stop(m->L);
    }
}

static void reset(Matcher *m) {
    m->captures = 0;
    m->depth = MAX_DEPTH;
}

static void begin(Matcher *m, lua_State *L, const char *s, size_t ls, const char *p, size_t lp) {
    m->L = L;
    m->subject = s;
    m->subject_end = s + ls;
    m->pattern_end = p + lp;
    m->budget = STEP_BUDGET;
    reset(m);
}

/* Past the single character class that starts at p: x, %x or [set]. */
static const char *class_end(Matcher *m, const char *p) {
    char c = *p++;
    if (c == '%') {
        if (p >= m->pattern_end)
            luaL_error(m->L, "malformed pattern (ends with '%%')");
        return p + 1;
    }
    if (c == '[') {
        if (*p == '^')
            p++;
        /* The set's first character is itself even when it is ']': "[]]" is the set of ']'. */
        do {
            if (p >= m->pattern_end)
                luaL_error(m->L, "malformed pattern (missing ']')");
            c = *p++;
            if (c == '%' && p < m->pattern_end)
                p++;
        } while (*p != ']');
        return p + 1;
    }
    return p;
}

/* Whether c is in the class %k (k a letter; an upper-case letter is the complement). */
static int in_escape(int c, int k) {
    int yes;
    switch (tolower(k)) {
    case 'a': yes = isalpha(c); break;
    case 'c': yes = iscntrl(c); break;
    case 'd': yes = isdigit(c); break;
    case 'g': yes = isgraph(c); break;
    case 'l': yes = islower(c); break;
    case 'p': yes = ispunct(c); break;
    case 's': yes = isspace(c); break;
    case 'u': yes = isupper(c); break;
    case 'w': yes = isalnum(c); break;
    case 'x': yes = isxdigit(c); break;
    case 'z': yes = c == 0; break; /* the zero byte: gone from the 5.4 manual, still in 5.4 */
    default: return k == c; /* %. and the like: the character itself */
    }
    yes = yes != 0;
    return isupper(k) ? !yes : yes;
}

/* Whether c is in the set [ ... ] from `open` (its '[') to `close` (its ']'). */
static int in_set(int c, const char *open, const char *close) {
    const char *p = open + 1;
    int complement = 0;
    if (*p == '^') {
        complement = 1;
        p++;
    }
    for (; p < close; p++) {
        if (*p == '%') {
            p++;
            if (in_escape(c, byte(p)))
                return !complement;
        } else if (p[1] == '-' && p + 2 < close) {
            if (byte(p) <= c && c <= byte(p + 2))
                return !complement;
            p += 2;
        } else if (byte(p) == c) {
            return !complement;
        }
    }
    return complement;
}

/* Whether the subject byte at s is in the class from p to end. */
static int matches_one(Matcher *m, const char *s, const char *p, const char *end) {
    if (s >= m->subject_end)
        return 0;
    int c = byte(s);
    switch (*p) {
    case '.': return 1;
    case '%': return in_escape(c, byte(p + 1));
    case '[': return in_set(c, p, end - 1);
    default: return byte(p) == c;
    }
}

static const char *match_here(Matcher *m, const char *s, const char *p);

/* x*: as many as possible, then fewer, until the rest matches. */
static const char *longest(Matcher *m, const char *s, const char *p, const char *end) {
    ptrdiff_t n = 0;
    while (matches_one(m, s + n, p, end)) {
        n++;
        spend(m, 1);
    }
    for (; n >= 0; n--) {
        const char *rest = match_here(m, s + n, end + 1);
        if (rest)
            return rest;
    }
    return NULL;
}

/* x-: as few as possible, then more, until the rest matches. */
static const char *shortest(Matcher *m, const char *s, const char *p, const char *end) {
    for (;;) {
        const char *rest = match_here(m, s, end + 1);
        if (rest)
            return rest;
        if (!matches_one(m, s, p, end))
            return NULL;
        s++;
        spend(m, 1);
    }
}

/* %bxy at s; p points at x. */
static const char *balanced(Matcher *m, const char *s, const char *p) {
    if (p + 1 >= m->pattern_end)
        luaL_error(m->L, "malformed pattern (missing arguments to '%%b')");
    if (s >= m->subject_end || *s != p[0])
        return NULL;
    char open = p[0], close = p[1];
    int level = 1;
    for (const char *q = s + 1; q < m->subject_end; q++) {
        spend(m, 1);
        if (*q == close) {
            if (--level == 0)
                return q + 1;
        } else if (*q == open) {
            level++;
        }
    }
    return NULL;
}

/* The index of capture %digit, raising when there is no such finished capture. */
static int capture_index(Matcher *m, int digit) {
    int i = digit - '1';
    if (i < 0 || i >= m->captures || m->capture[i].length == CAP_OPEN)
        luaL_error(m->L, "invalid capture index %%%d", i + 1);
    return i;
}

/* %1-%9 at s: the same bytes as that capture. */
static const char *same_as_capture(Matcher *m, const char *s, int digit) {
    int i = capture_index(m, digit);
    size_t length = (size_t)m->capture[i].length;
    spend(m, length / 64);
    if ((size_t)(m->subject_end - s) >= length && memcmp(m->capture[i].start, s, length) == 0)
        return s + length;
    return NULL;
}

static const char *open_capture(Matcher *m, const char *s, const char *p, ptrdiff_t kind) {
    if (m->captures >= MAX_CAPTURES)
        luaL_error(m->L, "too many captures");
    int i = m->captures++;
    m->capture[i].start = s;
    m->capture[i].length = kind;
    const char *rest = match_here(m, s, p);
    if (rest == NULL)
        m->captures--;
    return rest;
}

static const char *close_capture(Matcher *m, const char *s, const char *p) {
    int i = m->captures - 1;
    while (i >= 0 && m->capture[i].length != CAP_OPEN)
        i--;
    if (i < 0)
        luaL_error(m->L, "invalid pattern capture");
    m->capture[i].length = s - m->capture[i].start;
    const char *rest = match_here(m, s, p);
    if (rest == NULL)
        m->capture[i].length = CAP_OPEN;
    return rest;
}

/* Matches the pattern from p against the subject from s; returns the end of the match or
   NULL. Plain items advance in the loop; what may backtrack recurses. */
static const char *match_here(Matcher *m, const char *s, const char *p) {
    if (m->depth-- == 0)
        luaL_error(m->L, "pattern too complex");
    spend(m, 1);
    while (p < m->pattern_end) {
        switch (*p) {
        case '(':
            if (p + 1 < m->pattern_end && p[1] == ')')
                s = open_capture(m, s, p + 2, CAP_POSITION);
            else
                s = open_capture(m, s, p + 1, CAP_OPEN);
            goto done;
        case ')':
            s = close_capture(m, s, p + 1);
            goto done;
        case '$':
            if (p + 1 == m->pattern_end) {
                if (s != m->subject_end)
                    s = NULL;
                goto done;
            }
            break; /* a '$' elsewhere is itself */
        case '%':
            if (p[1] == 'b') {
                s = balanced(m, s, p + 2);
                if (s == NULL)
                    goto done;
                p += 4;
                continue;
            }
            if (p[1] == 'f') {
                p += 2;
                if (*p != '[')
                    luaL_error(m->L, "missing '[' after '%%f' in pattern");
                const char *end = class_end(m, p);
                int before = s == m->subject ? '\0' : byte(s - 1);
                int at = s < m->subject_end ? byte(s) : '\0';
                if (in_set(before, p, end - 1) || !in_set(at, p, end - 1)) {
                    s = NULL;
                    goto done;
                }
                p = end;
                continue;
            }
            if (isdigit(byte(p + 1))) {
                s = same_as_capture(m, s, byte(p + 1));
                if (s == NULL)
                    goto done;
                p += 2;
                continue;
            }
            break;
        }
        /* A single character class, maybe with a quantifier after it. */
        const char *end = class_end(m, p);
        char quantifier = end < m->pattern_end ? *end : '\0';
        int here = matches_one(m, s, p, end);
        if (quantifier == '?') {
            if (here) {
                const char *rest = match_here(m, s + 1, end + 1);
                if (rest) {
                    s = rest;
                    goto done;
                }
            }
            p = end + 1;
            continue;
        }
        if (quantifier == '+') {
            s = here ? longest(m, s + 1, p, end) : NULL;
            goto done;
        }
        if (quantifier == '*') {
            s = longest(m, s, p, end);
            goto done;
        }
        if (quantifier == '-') {
            s = shortest(m, s, p, end);
            goto done;
        }
        if (!here) {
            s = NULL;
            goto done;
        }
        s++;
        p = end;
    }
done:
    m->depth++;
    return s;
}

/* Pushes capture i; with no captures, capture 0 is the whole match from s to e. */
static void push_capture(Matcher *m, int i, const char *s, const char *e) {
    if (i >= m->captures) {
        if (i != 0)
            luaL_error(m->L, "invalid capture index %%%d", i + 1);
        lua_pushlstring(m->L, s, (size_t)(e - s));
        return;
    }
    ptrdiff_t length = m->capture[i].length;
    if (length == CAP_OPEN)
        luaL_error(m->L, "unfinished capture");
    if (length == CAP_POSITION)
        lua_pushinteger(m->L, (lua_Integer)(m->capture[i].start - m->subject) + 1);
    else
        lua_pushlstring(m->L, m->capture[i].start, (size_t)length);
}

/* Pushes every capture, or the whole match when there are none and s is given. */
static int push_captures(Matcher *m, const char *s, const char *e) {
    int n = (m->captures == 0 && s != NULL) ? 1 : m->captures;
    luaL_checkstack(m->L, n, "too many captures");
    for (int i = 0; i < n; i++)
        push_capture(m, i, s, e);
    return n;
}

/* A 1-based, maybe negative, start position as a 0-based offset (may be past the end). */
static size_t start_offset(lua_Integer position, size_t length) {
    if (position > 0)
        return (size_t)position - 1;
    if (position == 0 || position < -(lua_Integer)length)
        return 0;
    return length + (size_t)position;
}

static int has_specials(const char *p, size_t lp) {
    for (size_t i = 0; i < lp; i++)
        if (p[i] != '\0' && strchr(SPECIALS, p[i]) != NULL)
            return 1;
    return 0;
}

/* The first occurrence of needle in haystack, counting steps. */
static const char *find_plain(Matcher *m, const char *hay, size_t lh, const char *needle, size_t ln) {
    if (ln == 0)
        return hay;
    if (ln > lh)
        return NULL;
    const char *last = hay + (lh - ln);
    for (const char *q = hay; q <= last; q++) {
        q = memchr(q, needle[0], (size_t)(last - q) + 1);
        if (q == NULL)
            return NULL;
        spend(m, 1 + ln / 64);
        if (memcmp(q + 1, needle + 1, ln - 1) == 0)
            return q;
    }
    return NULL;
}

static int find_or_match(lua_State *L, int find) {
    size_t ls, lp;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    size_t start = start_offset(luaL_optinteger(L, 3, 1), ls);
    if (start > ls) {
        luaL_pushfail(L);
        return 1;
    }
    Matcher m;
    begin(&m, L, s, ls, p, lp);
    if (find && (lua_toboolean(L, 4) || !has_specials(p, lp))) {
        const char *at = find_plain(&m, s + start, ls - start, p, lp);
        if (at == NULL) {
            luaL_pushfail(L);
            return 1;
        }
        lua_pushinteger(L, (lua_Integer)(at - s) + 1);
        lua_pushinteger(L, (lua_Integer)(at - s) + (lua_Integer)lp);
        return 2;
    }
    int anchored = *p == '^';
    if (anchored)
        p++;
    for (const char *from = s + start;; from++) {
        reset(&m);
        const char *e = match_here(&m, from, p);
        if (e != NULL) {
            if (!find)
                return push_captures(&m, from, e);
            lua_pushinteger(L, (lua_Integer)(from - s) + 1);
            lua_pushinteger(L, (lua_Integer)(e - s));
            return 2 + push_captures(&m, NULL, NULL);
        }
        if (anchored || from >= m.subject_end)
            break;
    }
    luaL_pushfail(L);
    return 1;
}

static int pattern_find(lua_State *L) { return find_or_match(L, 1); }
static int pattern_match(lua_State *L) { return find_or_match(L, 0); }

/* gmatch's iterator state; its upvalues keep the subject and the pattern alive. */
typedef struct Iteration {
    const char *next;       /* where the next search starts */
    const char *last_end;   /* the end of the last match: an empty match there is skipped */
    size_t length, pattern_length;
} Iteration;

static int gmatch_next(lua_State *L) {
    size_t ls, lp;
    const char *s = lua_tolstring(L, lua_upvalueindex(1), &ls);
    const char *p = lua_tolstring(L, lua_upvalueindex(2), &lp);
    Iteration *it = lua_touserdata(L, lua_upvalueindex(3));
    Matcher m;
    begin(&m, L, s, ls, p, lp);
    for (const char *from = it->next; from <= m.subject_end; from++) {
        reset(&m);
        const char *e = match_here(&m, from, p);
        if (e != NULL && e != it->last_end) {
            it->next = it->last_end = e;
            return push_captures(&m, from, e);
        }
        spend(&m, 1);
    }
    it->next = m.subject_end + 1;
    return 0;
}

static int pattern_gmatch(lua_State *L) {
    size_t ls, lp;
    const char *s = luaL_checklstring(L, 1, &ls);
    luaL_checklstring(L, 2, &lp);
    size_t start = start_offset(luaL_optinteger(L, 3, 1), ls);
    if (start > ls)
        start = ls + 1;
    lua_settop(L, 2);
    Iteration *it = lua_newuserdatauv(L, sizeof(Iteration), 0);
    it->next = s + start;
    it->last_end = NULL;
    it->length = ls;
    it->pattern_length = lp;
    lua_pushcclosure(L, gmatch_next, 3);
    return 1;
}

/* Appends the replacement string (argument 3) for the match from s to e: %0-%9 and %%. */
static void add_template(Matcher *m, luaL_Buffer *b, const char *s, const char *e) {
    lua_State *L = m->L;
    size_t lr;
    const char *r = lua_tolstring(L, 3, &lr);
    const char *r_end = r + lr;
    while (r < r_end) {
        const char *escape = memchr(r, '%', (size_t)(r_end - r));
        if (escape == NULL) {
            luaL_addlstring(b, r, (size_t)(r_end - r));
            return;
        }
        luaL_addlstring(b, r, (size_t)(escape - r));
        char c = escape[1]; /* the string's terminating zero when '%' ends it */
        if (c == '%') {
            luaL_addchar(b, '%');
        } else if (c == '0') {
            luaL_addlstring(b, s, (size_t)(e - s));
        } else if (isdigit((unsigned char)c)) {
            push_capture(m, c - '1', s, e);
            luaL_tolstring(L, -1, NULL);
            lua_remove(L, -2);
            luaL_addvalue(b);
        } else {
            luaL_error(L, "invalid use of '%%' in replacement string");
        }
        r = escape + 2;
    }
}

/* Appends what replaces the match from s to e, as argument 3 (of type `kind`) says. */
static void add_replacement(Matcher *m, luaL_Buffer *b, const char *s, const char *e, int kind) {
    lua_State *L = m->L;
    if (kind == LUA_TSTRING || kind == LUA_TNUMBER) {
        add_template(m, b, s, e);
        return;
    }
    if (kind == LUA_TFUNCTION) {
        lua_pushvalue(L, 3);
        int n = push_captures(m, s, e);
        lua_call(L, n, 1);
    } else {
        push_capture(m, 0, s, e);
        lua_gettable(L, 3);
    }
    if (!lua_toboolean(L, -1)) {
        lua_pop(L, 1);
        luaL_addlstring(b, s, (size_t)(e - s)); /* false or nil: the match stays */
    } else if (!lua_isstring(L, -1)) {
        luaL_error(L, "invalid replacement value (a %s)", luaL_typename(L, -1));
    } else {
        luaL_addvalue(b);
    }
}

static int pattern_gsub(lua_State *L) {
    size_t ls, lp;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    int kind = lua_type(L, 3);
    lua_Integer most = luaL_optinteger(L, 4, (lua_Integer)ls + 1);
    luaL_argexpected(L, kind == LUA_TNUMBER || kind == LUA_TSTRING || kind == LUA_TFUNCTION || kind == LUA_TTABLE,
                     3, "string/function/table");
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    int anchored = *p == '^';
    if (anchored) {
        p++;
        lp--;
    }
    Matcher m;
    begin(&m, L, s, ls, p, lp);
    const char *from = s;
    const char *last_end = NULL;
    lua_Integer count = 0;
    while (count < most) {
        reset(&m);
        const char *e = match_here(&m, from, p);
        if (e != NULL && e != last_end) {
            count++;
            add_replacement(&m, &b, from, e, kind);
            from = last_end = e;
        } else if (from < m.subject_end) {
            luaL_addchar(&b, *from++);
            spend(&m, 1);
        } else {
            break;
        }
        if (anchored)
            break;
    }
    luaL_addlstring(&b, from, (size_t)(m.subject_end - from));
    luaL_pushresult(&b);
    lua_pushinteger(L, count);
    return 2;
}

void baton_open_patterns(lua_State *L) {
    static const luaL_Reg functions[] = {
        {"find", pattern_find},
        {"match", pattern_match},
        {"gmatch", pattern_gmatch},
        {"gsub", pattern_gsub},
        {NULL, NULL},
    };
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_getfield(L, -1, LUA_STRLIBNAME);
    if (lua_istable(L, -1))
        luaL_setfuncs(L, functions, 0);
    lua_pop(L, 2);
}
