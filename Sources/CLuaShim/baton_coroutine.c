/* The coroutine library as scripts see it: Lua 5.4's own (lcorolib.c), with two differences.

   1. A Baton call that waits yields the wait sentinel. When it does so inside a coroutine the
      script made, resume and wrap pass the sentinel on, out to the scheduler, and pass what
      the scheduler resumes with back in: Baton's waiting functions work inside coroutines,
      nested ones too.
   2. A task's own coroutine (the main chunk, a spawned function, a timer callback, a task the
      host starts) is the scheduler's, not the script's: to the script it is a main thread, as
      the main chunk is under the stock lua. yield there is an error, isyieldable is false,
      and running says it is the main thread.

   A coroutine Lua would call suspended but that only the scheduler may resume (another task's
   coroutine, or one whose Baton wait is on its way out) is busy elsewhere: the script sees it
   as "normal", and can neither resume nor close it.

   Written in C rather than in the Lua prelude so that these functions are C functions, as
   Lua's are: the position an error gets (luaL_where), argument errors and tracebacks are
   then the stock ones. */

#include "baton_shim.h"

static char tasks_key;   /* registry: weak-keyed set of the tasks' coroutines */
static char abandon_key; /* registry: the host function that abandons the current task's wait */

#define COS_RUN 0
#define COS_DEAD 1
#define COS_YIELD 2
#define COS_NORM 3

static const char *const statname[] = {"running", "dead", "suspended", "normal"};

static lua_State *getco(lua_State *L) {
    lua_State *co = lua_tothread(L, 1);
    luaL_argexpected(L, co, 1, "thread");
    return co;
}

/* Whether the thread at idx of L is a task's coroutine. */
static int is_task(lua_State *L, int idx) {
    idx = lua_absindex(L, idx);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &tasks_key);
    lua_pushvalue(L, idx);
    int task = lua_rawget(L, -2) != LUA_TNIL;
    lua_pop(L, 2);
    return task;
}

/* Whether co yielded the wait sentinel and its wait is not over: relay() leaves the sentinel
   on co's stack until then. */
static int waits_in_baton(lua_State *co) {
    return lua_status(co) == LUA_YIELD && lua_gettop(co) > 0 && lua_touserdata(co, -1) == baton_wait_sentinel();
}

/* Lua's own idea of co's status (lcorolib's auxstatus). */
static int auxstatus(lua_State *L, lua_State *co) {
    if (L == co)
        return COS_RUN;
    switch (lua_status(co)) {
    case LUA_YIELD:
        return COS_YIELD;
    case LUA_OK: {
        lua_Debug ar;
        if (lua_getstack(co, 0, &ar))
            return COS_NORM;
        return lua_gettop(co) == 0 ? COS_DEAD : COS_YIELD;
    }
    default:
        return COS_DEAD;
    }
}

/* Whether co, at idx of L, is suspended but the scheduler's to resume. */
static int scheduler_owned(lua_State *L, lua_State *co, int idx) {
    return auxstatus(L, co) == COS_YIELD && (waits_in_baton(co) || is_task(L, idx));
}

/* The status the script sees. */
static int costatus(lua_State *L, lua_State *co, int idx) {
    return scheduler_owned(L, co, idx) ? COS_NORM : auxstatus(L, co);
}

/* Resumes co with the narg values on top of L, until co returns, fails or yields something
   other than the wait sentinel. A wait is passed out by yielding L with the sentinel (where L
   can yield), and the function goes on in k once the wait is over. Returns the number of
   results moved to L, or -1 with the error on top of L (as lcorolib's auxresume). */
static int relay(lua_State *L, lua_State *co, int narg, lua_KFunction k) {
    for (;;) {
        int nres;
        int status = lua_resume(co, L, narg, &nres);
        if (status == LUA_YIELD && nres == 1 && lua_touserdata(co, -1) == baton_wait_sentinel()) {
            if (lua_isyieldable(L)) {
                lua_pushlightuserdata(L, baton_wait_sentinel());
                return lua_yieldk(L, 1, 0, k);
            }
            /* L cannot yield (co was resumed from a metamethod or table.sort): the wait
               fails inside co, where the script can catch it. */
            lua_pop(co, 1);
            lua_rawgetp(L, LUA_REGISTRYINDEX, &abandon_key);
            lua_call(L, 0, 0);
            if (!lua_checkstack(co, 2)) {
                lua_pushliteral(L, "not enough memory");
                return -1;
            }
            /* Made on L, the running thread: an allocation error must not be raised in co. */
            lua_pushboolean(L, 0);
            lua_pushliteral(L, "cannot wait here: this coroutine was resumed where Lua cannot yield "
                               "(inside a metamethod, an iterator or a C function such as table.sort)");
            lua_xmove(L, co, 2);
            narg = 2;
            continue;
        }
        if (status == LUA_OK || status == LUA_YIELD) {
            if (!lua_checkstack(L, nres + 1)) {
                lua_pop(co, nres);
                lua_pushliteral(L, "too many results to resume");
                return -1;
            }
            lua_xmove(co, L, nres);
            return nres;
        }
        lua_xmove(co, L, 1); /* the error */
        return -1;
    }
}

/* lcorolib's auxresume: starts a resumption of co (at idx of L). */
static int auxresume(lua_State *L, lua_State *co, int idx, int narg, lua_KFunction k) {
    if (scheduler_owned(L, co, idx)) {
        lua_pushliteral(L, "cannot resume non-suspended coroutine");
        return -1;
    }
    if (!lua_checkstack(co, narg)) {
        lua_pushliteral(L, "too many arguments to resume");
        return -1;
    }
    lua_xmove(L, co, narg);
    return relay(L, co, narg, k);
}

/* After a relayed wait: hands the values L was resumed with (all above base) to co, in place
   of the sentinel it yielded, and resumes it. */
static int relay_resumed(lua_State *L, lua_State *co, int base, lua_KFunction k) {
    int narg = lua_gettop(L) - base;
    lua_pop(co, 1);
    if (!lua_checkstack(co, narg))
        return luaL_error(L, "too many results to resume");
    lua_xmove(L, co, narg);
    return relay(L, co, narg, k);
}

static int resume_results(lua_State *L, int r) {
    if (r < 0) {
        lua_pushboolean(L, 0);
        lua_insert(L, -2);
        return 2;
    }
    lua_pushboolean(L, 1);
    lua_insert(L, -(r + 1));
    return r + 1;
}

static int resume_k(lua_State *L, int status, lua_KContext ctx) {
    (void)status;
    (void)ctx;
    return resume_results(L, relay_resumed(L, lua_tothread(L, 1), 1, resume_k));
}

static int co_resume(lua_State *L) {
    lua_State *co = getco(L);
    return resume_results(L, auxresume(L, co, 1, lua_gettop(L) - 1, resume_k));
}

/* lcorolib's auxwrap: an error closes the coroutine's to-be-closed variables, and the error
   that leaves (a __close handler's, if one raised) gets the caller's position if a string. */
static int wrap_results(lua_State *L, lua_State *co, int r) {
    if (r >= 0)
        return r;
    int stat = lua_status(co);
    if (stat != LUA_OK && stat != LUA_YIELD) {
        stat = lua_resetthread(co);
        lua_xmove(co, L, 1);
    }
    if (stat != LUA_ERRMEM && lua_type(L, -1) == LUA_TSTRING) {
        luaL_where(L, 1);
        lua_insert(L, -2);
        lua_concat(L, 2);
    }
    return lua_error(L);
}

static int wrap_k(lua_State *L, int status, lua_KContext ctx) {
    (void)status;
    (void)ctx;
    lua_State *co = lua_tothread(L, lua_upvalueindex(1));
    return wrap_results(L, co, relay_resumed(L, co, 0, wrap_k));
}

static int auxwrap(lua_State *L) {
    lua_State *co = lua_tothread(L, lua_upvalueindex(1));
    return wrap_results(L, co, auxresume(L, co, lua_upvalueindex(1), lua_gettop(L), wrap_k));
}

static int co_wrap(lua_State *L) {
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_State *co = lua_newthread(L);
    lua_pushvalue(L, 1);
    lua_xmove(L, co, 1);
    lua_pushcclosure(L, auxwrap, 1);
    return 1;
}

static int co_yield(lua_State *L) {
    lua_pushthread(L);
    int task = is_task(L, -1);
    lua_pop(L, 1);
    if (task) {
        /* Lua's own words for a yield in the main thread. */
        lua_pushliteral(L, "attempt to yield from outside a coroutine");
        return lua_error(L);
    }
    return lua_yield(L, lua_gettop(L));
}

static int co_isyieldable(lua_State *L) {
    lua_State *co = L;
    if (lua_isnone(L, 1))
        lua_pushthread(L);
    else
        co = getco(L);
    lua_pushboolean(L, lua_isyieldable(co) && !is_task(L, 1));
    return 1;
}

static int co_running(lua_State *L) {
    int ismain = lua_pushthread(L);
    lua_pushboolean(L, ismain || is_task(L, -1));
    return 2;
}

static int co_status(lua_State *L) {
    lua_State *co = getco(L);
    lua_pushstring(L, statname[costatus(L, co, 1)]);
    return 1;
}

static int co_close(lua_State *L) {
    lua_State *co = getco(L);
    int status = costatus(L, co, 1);
    switch (status) {
    case COS_DEAD:
    case COS_YIELD:
        status = lua_resetthread(co);
        if (status == LUA_OK) {
            lua_pushboolean(L, 1);
            return 1;
        }
        lua_pushboolean(L, 0);
        lua_xmove(co, L, 1);
        return 2;
    default:
        return luaL_error(L, "cannot close a %s coroutine", statname[status]);
    }
}

static const luaL_Reg co_funcs[] = {
    {"resume", co_resume}, {"wrap", co_wrap}, {"yield", co_yield}, {"isyieldable", co_isyieldable},
    {"running", co_running}, {"status", co_status}, {"close", co_close}, {NULL, NULL},
};

void baton_open_coroutines(lua_State *L) {
    lua_rawsetp(L, LUA_REGISTRYINDEX, &abandon_key);
    lua_newtable(L);
    lua_newtable(L);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &tasks_key);
    lua_getglobal(L, "coroutine");
    luaL_setfuncs(L, co_funcs, 0);
    lua_pop(L, 1);
}

void baton_mark_task(lua_State *L) {
    lua_rawgetp(L, LUA_REGISTRYINDEX, &tasks_key);
    lua_pushvalue(L, -2);
    lua_pushboolean(L, 1);
    lua_rawset(L, -3);
    lua_pop(L, 1);
}
