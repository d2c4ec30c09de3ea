#include "baton_shim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static baton_dispatch_fn dispatch;
static char wait_sentinel;

void baton_set_dispatch(baton_dispatch_fn fn) { dispatch = fn; }
void *baton_wait_sentinel(void) { return &wait_sentinel; }

int64_t baton_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

baton_runtime *baton_runtime_of(lua_State *L) {
    return *(baton_runtime **)lua_getextraspace(L);
}

/* Lua 5.4's allocator contract: when ptr is NULL, osize is a type tag, not a size. */
static void *baton_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    baton_runtime *rt = ud;
    size_t old = ptr ? osize : 0;
    if (nsize == 0) {
        free(ptr);
        rt->used -= old;
        return NULL;
    }
    if (rt->limit && rt->in_lua && nsize > old && rt->used - old + nsize > rt->limit)
        return NULL; /* Lua raises "not enough memory" where the script can catch it */
    void *p = realloc(ptr, nsize);
    if (p == NULL) {
        if (!rt->in_lua) {
            /* Failing here would longjmp through Swift frames; the system is out of memory. */
            fputs("baton: out of memory\n", stderr);
            abort();
        }
        return NULL;
    }
    rt->used = rt->used - old + nsize;
    return p;
}

static void count_hook(lua_State *L, lua_Debug *ar);

/* Whether the code running now must stop: the run is ending, its deadline has passed, or the
   current task's has. Reads the clock only when there is a deadline. */
static int must_stop(baton_runtime *rt) {
    if (rt->stopping || rt->task_stopping)
        return 1;
    if (!rt->deadline_ns && !rt->task_deadline_ns)
        return 0;
    int64_t now = baton_monotonic_ns();
    if (rt->deadline_ns && now >= rt->deadline_ns) {
        rt->timed_out = 1;
        rt->stopping = 1;
        return 1;
    }
    if (rt->task_deadline_ns && now >= rt->task_deadline_ns) {
        rt->task_stopping = 1;
        return 1;
    }
    return 0;
}

static void raise_stop(lua_State *L, baton_runtime *rt) {
    /* Fire on every instruction from now on, so no pcall can swallow the stop. */
    lua_sethook(L, count_hook, LUA_MASKCOUNT, 1);
    if (rt->stopping)
        lua_pushstring(L, rt->stop_message);
    else
        lua_pushliteral(L, BATON_TASK_TIMEOUT_MESSAGE);
    lua_error(L);
}

static void count_hook(lua_State *L, lua_Debug *ar) {
    (void)ar;
    baton_runtime *rt = baton_runtime_of(L);
    if (!must_stop(rt))
        return;
    /* A yield ends the task where it stands: no pcall can catch it and no message handler
       runs (a handler raised from here would run with hooks off, and could loop forever). */
    if (lua_isyieldable(L)) {
        lua_yield(L, 0);
        return;
    }
    raise_stop(L, rt);
}

void baton_check_stop(lua_State *L) {
    baton_runtime *rt = baton_runtime_of(L);
    if (must_stop(rt))
        raise_stop(L, rt);
}

void baton_rearm_hook(lua_State *L) { lua_sethook(L, count_hook, LUA_MASKCOUNT, BATON_HOOK_COUNT); }

lua_State *baton_newstate(baton_runtime *rt) {
    lua_State *L = lua_newstate(baton_alloc, rt);
    if (L == NULL)
        return NULL;
    *(baton_runtime **)lua_getextraspace(L) = rt;
    /* Threads made later copy the hook and the extra space from the main thread. Only with
       a deadline: a count hook slows every instruction down. A task with a deadline of its
       own gets the hook on its coroutine (baton_rearm_hook) when it is resumed. */
    if (rt->deadline_ns)
        lua_sethook(L, count_hook, LUA_MASKCOUNT, BATON_HOOK_COUNT);
    return L;
}

void baton_enter_lua(lua_State *L) { baton_runtime_of(L)->in_lua = 1; }
void baton_leave_lua(lua_State *L) { baton_runtime_of(L)->in_lua = 0; }

void baton_stop(lua_State *L, const char *message) {
    baton_runtime *rt = baton_runtime_of(L);
    snprintf(rt->stop_message, sizeof rt->stop_message, "%s", message);
    rt->stopping = 1;
    lua_sethook(L, count_hook, LUA_MASKCOUNT, 1);
}

int baton_close_thread(lua_State *co) {
    lua_Debug ar;
    /* A thread with a frame and no yield is running, or has resumed the coroutine that runs
       now: resetting it would pull the stack out from under live C frames. */
    if (lua_status(co) == LUA_OK && lua_getstack(co, 0, &ar))
        return -1;
    baton_runtime *rt = baton_runtime_of(co);
    int was_in_lua = rt->in_lua;
    /* __close metamethods are Lua code: the cap applies, and baton functions may be called. */
    rt->in_lua = 1;
#if LUA_VERSION_RELEASE_NUM >= 50406
    int status = lua_closethread(co, NULL);
#else
    int status = lua_resetthread(co);
#endif
    rt->in_lua = was_in_lua;
    return status;
}

int baton_resume(lua_State *co, lua_State *from, int nargs, int *nresults) {
    baton_enter_lua(co);
    int status = lua_resume(co, from, nargs, nresults);
    baton_leave_lua(co);
    return status;
}

void baton_close_failed(lua_State *co) {
    baton_enter_lua(co);
    lua_resetthread(co);
    baton_leave_lua(co);
}

static int traceback_handler(lua_State *L) {
    const char *msg = lua_tostring(L, 1);
    if (msg == NULL) {
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
            return 1;
        msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    luaL_traceback(L, L, msg, 1);
    return 1;
}

int baton_pcall_traceback(lua_State *L, int nargs, int nresults) {
    int base = lua_gettop(L) - nargs;
    lua_pushcfunction(L, traceback_handler);
    lua_insert(L, base);
    int was_in_lua = baton_runtime_of(L)->in_lua;
    if (!was_in_lua)
        baton_enter_lua(L);
    int status = lua_pcall(L, nargs, nresults, base);
    if (!was_in_lua)
        baton_leave_lua(L);
    lua_remove(L, base);
    return status;
}

static int tostring_protected(lua_State *L) {
    luaL_tolstring(L, 1, NULL);
    return 1;
}

const char *baton_safe_tostring(lua_State *L, int idx, size_t *len) {
    idx = lua_absindex(L, idx);
    if (lua_type(L, idx) == LUA_TSTRING) {
        lua_pushvalue(L, idx);
        return lua_tolstring(L, -1, len);
    }
    lua_pushcfunction(L, tostring_protected);
    lua_pushvalue(L, idx);
    if (lua_pcall(L, 1, 1, 0) != LUA_OK || lua_type(L, -1) != LUA_TSTRING) {
        lua_pop(L, 1);
        lua_pushfstring(L, "(%s value)", luaL_typename(L, idx));
    }
    return lua_tolstring(L, -1, len);
}

/* Runs when the host resumes a waiting task: the resume arguments are (true, results...),
   (false, error) to raise error as it is, or (1, message) to raise message with the caller's
   position. ctx is the stack top at the moment of the wait. */
static int wait_continuation(lua_State *L, int status, lua_KContext ctx) {
    (void)status;
    int base = (int)ctx;
    int top = lua_gettop(L);
    if (top <= base)
        return 0;
    if (lua_type(L, base + 1) == LUA_TNUMBER) {
        luaL_where(L, 1);
        lua_insert(L, -2);
        lua_concat(L, 2);
        return lua_error(L);
    }
    if (!lua_toboolean(L, base + 1))
        return lua_error(L); /* the error value is on top */
    return top - base - 1;
}

static int host_trampoline(lua_State *L) {
    baton_runtime *rt = baton_runtime_of(L);
    void *box = lua_touserdata(L, lua_upvalueindex(1));
    if (!rt->in_lua) {
        /* Only a finalizer run by an allocation inside host code gets here; raising is safe
           (the finalizer runs protected, in C) and keeps host code from being re-entered. */
        lua_pushliteral(L, "baton functions cannot be called from a __gc finalizer");
        return lua_error(L);
    }
    rt->in_lua = 0;
    int n = dispatch(L, box);
    rt->in_lua = 1;
    if (n >= 0) {
        /* Host code may allocate past the cap (it must never fail with a longjmp); settle
           the account here, collecting first: the excess may be garbage already. */
        if (rt->limit && rt->used > rt->limit) {
            lua_gc(L, LUA_GCCOLLECT);
            if (rt->used > rt->limit) {
                lua_settop(L, 0);
                lua_gc(L, LUA_GCCOLLECT);
                lua_pushliteral(L, "not enough memory");
                return lua_error(L);
            }
        }
        return n;
    }
    switch (n) {
    case BATON_RAISE_WHERE:
        luaL_where(L, 1);
        lua_insert(L, -2);
        lua_concat(L, 2);
        return lua_error(L);
    case BATON_WAIT: {
        int base = lua_gettop(L);
        lua_pushlightuserdata(L, &wait_sentinel);
        return lua_yieldk(L, 1, (lua_KContext)base, wait_continuation);
    }
    default:
        return lua_error(L);
    }
}

void baton_push_host_function(lua_State *L, void *box) {
    lua_pushlightuserdata(L, box);
    lua_pushcclosure(L, host_trampoline, 1);
}
