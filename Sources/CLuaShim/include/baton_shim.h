#ifndef BATON_SHIM_H
#define BATON_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <lua.h>
#include <lualib.h>
#include <lauxlib.h>

/* What a Swift host function returns to its C trampoline. A count >= 0 returns that many
   values from the top of the stack. */
#define BATON_RAISE (-1)        /* raise the value on top of the stack as it is */
#define BATON_RAISE_WHERE (-2)  /* raise the string on top, prefixed with "chunk:line: " */
#define BATON_WAIT (-3)         /* suspend the calling task until the host resumes it */

/* The per-state limits and bookkeeping that C needs without calling into Swift. One per
   lua_State, reachable from every thread of that state through the extra space. */
typedef struct baton_runtime {
    size_t used;             /* bytes currently allocated by the state */
    size_t limit;            /* the memory cap; 0 means none */
    int in_lua;              /* 1 while Lua code runs (not host code); the cap applies only then */
    volatile int stopping;   /* set once the run must end: every count hook then raises */
    int timed_out;           /* set by the hook when it finds the deadline passed */
    int64_t deadline_ns;     /* CLOCK_MONOTONIC deadline in ns; 0 means none */
    int64_t task_deadline_ns; /* the running task's deadline (the scheduler sets it); 0: none */
    volatile int task_stopping; /* set once the running task's deadline has passed */
    char stop_message[160];  /* the error the hook raises once stopping */
} baton_runtime;

/* What a task stopped at its deadline fails with. */
#define BATON_TASK_TIMEOUT_MESSAGE "timed out: the task ran past its deadline, or too long without a wait"
/* VM instructions between two runs of the count hook. */
#define BATON_HOOK_COUNT 1000

/* The function every host-function trampoline calls: `box` is the pointer given to
   baton_push_host_function. */
typedef int (*baton_dispatch_fn)(lua_State *L, void *box);
void baton_set_dispatch(baton_dispatch_fn fn);

/* Creates a state whose allocator counts bytes against rt->limit, with rt in the extra space
   of every thread. When rt->deadline_ns is set, installs the count hook that enforces it (and
   rt->task_deadline_ns); a task with a deadline needs baton_rearm_hook on its coroutine. */
lua_State *baton_newstate(baton_runtime *rt);
baton_runtime *baton_runtime_of(lua_State *L);

/* Pushes a C closure that calls the dispatch function with `box`. */
void baton_push_host_function(lua_State *L, void *box);

/* The value a waiting host function yields; a task that yields it is waiting on the host. */
void *baton_wait_sentinel(void);

/* Replaces coroutine.resume, wrap, yield, isyieldable, running, status and close with Baton's
   (baton_coroutine.c): Lua's own, except that a Baton wait inside a coroutine reaches the
   scheduler, and that a task's coroutine looks like a main thread. Pops the host function
   that abandons the current task's wait, which they call where a wait cannot reach the
   scheduler. */
void baton_open_coroutines(lua_State *L);

/* Replaces string.find, match, gmatch and gsub with Baton's (baton_pattern.c): the same
   results, but a long match stops at the run's or the task's deadline. */
void baton_open_patterns(lua_State *L);

/* For C functions that may run long: raises the stop (as the count hook does, armed so that
   no pcall swallows it) when the run is ending or its or the running task's deadline has
   passed; returns otherwise. Call only where a Lua error may be raised (no Swift frame
   between here and the lua_resume or lua_pcall that catches it). */
void baton_check_stop(lua_State *L);

/* Sets L's count hook, at its usual period: for a coroutine about to run a task with a
   deadline (coroutines it makes inherit it), or after a task's stop armed it on every
   instruction. */
void baton_rearm_hook(lua_State *L);

/* Marks the thread on top of L's stack as a task's coroutine (leaves it there). */
void baton_mark_task(lua_State *L);

/* Lua code runs only between these two: the memory cap applies only inside, so that an
   allocation made by Swift code never fails with a longjmp. */
void baton_enter_lua(lua_State *L);
void baton_leave_lua(lua_State *L);

/* Marks the run as ending and arms the count hook on L, so that even code that catches errors
   with pcall stops at once. */
void baton_stop(lua_State *L, const char *message);

/* Cancels a suspended or not yet started coroutine: closes its pending to-be-closed variables
   (their __close metamethods run without being able to yield, as Lua closes them on an error)
   and empties its stack, as lua_resetthread does. Never raises. Returns LUA_OK; another status
   when a __close raised, with that error on top of co; or -1, touching nothing, when co is
   running or has resumed the coroutine that runs now. */
int baton_close_thread(lua_State *co);

/* Resumes a coroutine with the cap and collector on. */
int baton_resume(lua_State *co, lua_State *from, int nargs, int *nresults);
/* Closes the pending to-be-closed variables of co, a coroutine that failed, with the cap and
   the collector on; leaves the error (a __close handler's, if one raised) on top of co. */
void baton_close_failed(lua_State *co);
/* lua_pcall with a traceback message handler, the cap and the collector on. */
int baton_pcall_traceback(lua_State *L, int nargs, int nresults);

/* tostring(v) without the risk of a __tostring metamethod raising through Swift: on error
   pushes a description of the value instead. Always pushes exactly one string. */
const char *baton_safe_tostring(lua_State *L, int idx, size_t *len);

/* Monotonic clock in nanoseconds. */
int64_t baton_monotonic_ns(void);

/* Wrappers for Lua's function-like macros. */
static inline void baton_pop(lua_State *L, int n) { lua_pop(L, n); }
static inline void baton_newtable(lua_State *L) { lua_newtable(L); }
static inline int baton_registryindex(void) { return LUA_REGISTRYINDEX; }
static inline int baton_upvalueindex(int i) { return lua_upvalueindex(i); }
static inline void baton_insert(lua_State *L, int idx) { lua_insert(L, idx); }
static inline void baton_remove(lua_State *L, int idx) { lua_remove(L, idx); }
static inline void baton_replace(lua_State *L, int idx) { lua_replace(L, idx); }
static inline const char *baton_tostring(lua_State *L, int idx, size_t *len) { return lua_tolstring(L, idx, len); }
static inline lua_Number baton_tonumber(lua_State *L, int idx, int *isnum) { return lua_tonumberx(L, idx, isnum); }
static inline lua_Integer baton_tointeger(lua_State *L, int idx, int *isnum) { return lua_tointegerx(L, idx, isnum); }
static inline void *baton_newuserdata(lua_State *L, size_t size, int nuvalue) { return lua_newuserdatauv(L, size, nuvalue); }
static inline int baton_getmetatable_named(lua_State *L, const char *name) { return luaL_getmetatable(L, name); }
static inline int baton_isyieldable(lua_State *L) { return lua_isyieldable(L); }
static inline int baton_loadbuffer(lua_State *L, const char *buf, size_t len, const char *name) {
    return luaL_loadbufferx(L, buf, len, name, "t");
}
static inline int baton_loadfile(lua_State *L, const char *path) { return luaL_loadfilex(L, path, "t"); }

#endif
