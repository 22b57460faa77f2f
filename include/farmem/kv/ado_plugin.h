/* The Active Data Object (ADO) plugin ABI: what a plugin shared library exports and what it
 * may call. Byte-level contract and rules: docs/formats/ado.md ("Plugin ABI").
 *
 * A plugin is a shared library (C or C++) in the memory node's ado_plugin_dir that exports one
 * C function, FARMEM_ADO_ENTRY_POINT, returning a pointer to a static farmem_ado_plugin. The
 * memory node runs one ADO process (farmem-ado) per pool that has plugins; that process loads
 * the pool's plugins with dlopen, calls launch() once, then do_work() for every invocation and
 * signal, op_event() for pool events, and shutdown() last. Everything runs on the process's one
 * thread, one call at a time: a plugin needs no locks.
 *
 * Values are the pool's memory, mapped into the ADO process: farmem_ado_value.data points into
 * the memory node's exported region, and a plugin reads and writes values in place. The target
 * value of an invocation is locked for the call (write lock, or read lock with
 * FARMEM_ADO_WORK_READ_ONLY: then the plugin must not write it). References from iterate() are
 * not locked: the plugin reads them and then checks ref_is_current() (a seqlock-style check of
 * the record's state word). The store callbacks (farmem_ado_store_ops) are messages to the
 * memory node's pool worker; each returns FARMEM_ADO_OK or a negative FARMEM_ADO_E_* code, and
 * last_error() tells why in words.
 *
 * Versioning: abi_version must equal FARMEM_ADO_ABI_VERSION and struct_bytes must be at least
 * the size the host knows; fields are only ever appended.
 */
#ifndef FARMEM_KV_ADO_PLUGIN_H_
#define FARMEM_KV_ADO_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#define FARMEM_ADO_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define FARMEM_ADO_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

#define FARMEM_ADO_ABI_VERSION 1u
/* The exported symbol: const farmem_ado_plugin* farmem_ado_plugin_v1(void); */
#define FARMEM_ADO_ENTRY_POINT "farmem_ado_plugin_v1"

/* Status codes of callbacks and do_work. Negative codes are farmem StatusCode values negated. */
#define FARMEM_ADO_OK 0
#define FARMEM_ADO_ERASE_TARGET 1 /* do_work: erase the target key after the call */
#define FARMEM_ADO_NOT_MINE 2     /* do_work: not this plugin's request; offer it to the next */
#define FARMEM_ADO_MORE 3 /* find_key: no match within the budget; call again at *position */
#define FARMEM_ADO_E_INVALID (-1)
#define FARMEM_ADO_E_OUT_OF_RANGE (-2)
#define FARMEM_ADO_E_NOT_FOUND (-3)
#define FARMEM_ADO_E_EXISTS (-4)
#define FARMEM_ADO_E_EXHAUSTED (-5)
#define FARMEM_ADO_E_TIMED_OUT (-6)
#define FARMEM_ADO_E_PROTOCOL (-8)
#define FARMEM_ADO_E_UNAVAILABLE (-10)
#define FARMEM_ADO_E_INTERNAL (-11)
#define FARMEM_ADO_E_BUSY (-15)

/* farmem_ado_work.flags */
#define FARMEM_ADO_WORK_NEW_VALUE 1u /* the target value was created by this invocation */
#define FARMEM_ADO_WORK_READ_ONLY 2u /* the target is read-locked: do not write it */
#define FARMEM_ADO_WORK_DETACHED 4u  /* values[1] is a detached value (invoke_put_ado) */
#define FARMEM_ADO_WORK_SIGNAL 8u    /* a signal, not an invocation: signal says which */
#define FARMEM_ADO_WORK_ASYNC 16u    /* the client does not wait; responses are dropped */

/* farmem_ado_work.signal */
#define FARMEM_ADO_SIGNAL_NONE 0u
#define FARMEM_ADO_SIGNAL_POST_PUT 1u
#define FARMEM_ADO_SIGNAL_POST_GET 2u
#define FARMEM_ADO_SIGNAL_POST_ERASE 3u

/* op_event kinds */
#define FARMEM_ADO_EVENT_CREATE 1u      /* the pool was created (first launch after create) */
#define FARMEM_ADO_EVENT_OPEN 2u        /* a client session opened the pool */
#define FARMEM_ADO_EVENT_CLOSE 3u       /* a client session closed the pool */
#define FARMEM_ADO_EVENT_ERASE 4u       /* a client erased key (not through the ADO) */
#define FARMEM_ADO_EVENT_RESIZE 5u      /* a value was resized (key) */
#define FARMEM_ADO_EVENT_POOL_DELETE 6u /* the pool is being deleted; shutdown follows */
#define FARMEM_ADO_EVENT_SHUTDOWN 7u    /* the ADO process is stopping; shutdown() follows */

/* open_key flags */
#define FARMEM_ADO_LOCK_READ 1u
#define FARMEM_ADO_LOCK_WRITE 2u

/* Bounds (the memory node enforces them too). */
#define FARMEM_ADO_MAX_RESPONSES 64u         /* == kv::wire::kMaxAdoResponses */
#define FARMEM_ADO_MAX_RESPONSE_BYTES 65000u /* all responses of a call, with their headers */
#define FARMEM_ADO_MAX_ITERATE_REFS 1024u    /* references per iterate() call */
#define FARMEM_ADO_MAX_ERROR_BYTES 512u      /* launch error text */

/* A value in the pool's memory, mapped into this process. */
typedef struct farmem_ado_value {
  uint8_t* data;   /* first byte (valid while locked, or until freed) */
  uint64_t bytes;  /* length */
  uint64_t offset; /* region offset of the first byte (what the memory node calls it) */
} farmem_ado_value;
FARMEM_ADO_STATIC_ASSERT(sizeof(farmem_ado_value) == 24, "farmem_ado_value");

/* An unlocked reference to a record, from iterate(). */
typedef struct farmem_ado_ref {
  const uint8_t* key;
  const uint8_t* value;
  uint32_t key_bytes;
  uint32_t reserved;
  uint64_t value_bytes;
  uint64_t record;  /* region offset of the record */
  uint64_t version; /* the record's version when the memory node listed it */
} farmem_ado_ref;
FARMEM_ADO_STATIC_ASSERT(sizeof(farmem_ado_ref) == 48, "farmem_ado_ref");

typedef struct farmem_ado_pool_info {
  uint64_t count;          /* keys */
  uint64_t used_bytes;     /* pool memory in use */
  uint64_t capacity_bytes; /* pool capacity */
} farmem_ado_pool_info;

typedef struct farmem_ado_param {
  const char* key; /* NUL-terminated */
  const char* value;
} farmem_ado_param;

typedef struct farmem_ado_launch {
  const char* pool_name; /* NUL-terminated */
  uint64_t pool_capacity_bytes;
  const farmem_ado_param* params; /* AdoParam::<key>=<value> of the pool's configuration */
  uint32_t param_count;
  uint32_t flags; /* FARMEM_ADO_LAUNCH_NEW_POOL */
} farmem_ado_launch;
#define FARMEM_ADO_LAUNCH_NEW_POOL 1u

/* One invocation (or signal). Pointers are valid during the do_work call only. */
typedef struct farmem_ado_work {
  uint64_t work_id;
  const uint8_t* key; /* the target key; key_bytes == 0 for a key-less invocation */
  const uint8_t* request;
  uint32_t key_bytes;
  uint32_t request_bytes;
  uint32_t flags;       /* FARMEM_ADO_WORK_* */
  uint32_t signal;      /* FARMEM_ADO_SIGNAL_* with FARMEM_ADO_WORK_SIGNAL */
  uint32_t value_count; /* 0 (key-less, or a signal of an erase), 1, or 2 (detached) */
  uint32_t reserved;
  farmem_ado_value values[2]; /* [0] the target's value, [1] the detached value */
} farmem_ado_work;

typedef struct farmem_ado_store farmem_ado_store; /* the host's, opaque */

/* Callbacks into the store. Keys created or opened during a do_work call stay locked until
 * that call returns (or unlock_key). Every function is safe to call only from inside launch,
 * do_work or op_event, on the calling thread. */
typedef struct farmem_ado_store_ops {
  uint32_t struct_bytes; /* sizeof(farmem_ado_store_ops) of the host */
  uint32_t reserved;
  /* A new key with a zeroed value of value_bytes, write-locked; FARMEM_ADO_E_EXISTS if present. */
  int32_t (*create_key)(farmem_ado_store* s, uint64_t work_id, const void* key, uint32_t key_bytes,
                        uint64_t value_bytes, farmem_ado_value* out);
  /* Locks an existing key (FARMEM_ADO_LOCK_READ or _WRITE) and maps its value. */
  int32_t (*open_key)(farmem_ado_store* s, uint64_t work_id, const void* key, uint32_t key_bytes,
                      uint32_t lock, farmem_ado_value* out);
  /* Erases a key that is not locked (not the target: return FARMEM_ADO_ERASE_TARGET for it). */
  int32_t (*erase_key)(farmem_ado_store* s, const void* key, uint32_t key_bytes);
  /* Resizes a key this call holds write-locked (the target or one it opened); the value may
   * move: use out from now on. Bytes up to the smaller size are kept, new bytes are zero. */
  int32_t (*resize_value)(farmem_ado_store* s, uint64_t work_id, const void* key,
                          uint32_t key_bytes, uint64_t new_bytes, farmem_ado_value* out);
  /* Pool memory owned by the pool (freed by free_pool_memory or when the pool is deleted). */
  int32_t (*allocate_pool_memory)(farmem_ado_store* s, uint64_t bytes, uint64_t alignment,
                                  farmem_ado_value* out);
  int32_t (*free_pool_memory)(farmem_ado_store* s, uint64_t offset, uint64_t bytes);
  /* Secondary-index search (kv.md "Find"): the first key matching expression at a position
   * >= start. FARMEM_ADO_E_NOT_FOUND at the end; FARMEM_ADO_MORE when the node's budget of keys
   * per call ran out first (call again with start = *position). */
  int32_t (*find_key)(farmem_ado_store* s, const char* expression, uint32_t expression_bytes,
                      uint64_t start, uint64_t* position, void* key_out, uint32_t key_capacity,
                      uint32_t* key_bytes);
  /* Up to max_refs records from *cursor (0 = the start); *cursor is updated, and becomes
   * UINT64_MAX at the end. Keys locked by others are listed too (ref_is_current tells). */
  int32_t (*iterate)(farmem_ado_store* s, uint64_t* cursor, farmem_ado_ref* refs, uint32_t max_refs,
                     uint32_t* count);
  /* Releases a key this call created or opened, before the call returns. */
  int32_t (*unlock_key)(farmem_ado_store* s, uint64_t work_id, const void* key, uint32_t key_bytes);
  int32_t (*pool_info)(farmem_ado_store* s, farmem_ado_pool_info* out);
  /* 1 if the record behind ref is still the live version listed (read it, then check), else 0.
   * Local: no message to the memory node. */
  int32_t (*ref_is_current)(farmem_ado_store* s, const farmem_ado_ref* ref);
  /* Appends a response to the current call's reply (layer: a plugin-defined tag). At most
   * FARMEM_ADO_MAX_RESPONSES responses and FARMEM_ADO_MAX_RESPONSE_BYTES in all, else
   * FARMEM_ADO_E_EXHAUSTED. Ignored for asynchronous calls and signals. */
  int32_t (*respond)(farmem_ado_store* s, uint64_t work_id, uint32_t layer, const void* data,
                     uint64_t bytes);
  /* The text of the last failed callback (NUL-terminated; valid until the next callback). */
  const char* (*last_error)(farmem_ado_store* s);
  /* ---- crash-consistent updates (hosts whose struct_bytes reaches them; see
   * FARMEM_ADO_HAS_TX) ----
   * An invocation is one transaction over the values it holds write-locked (its target, keys it
   * created or opened for writing): call tx_add(data, bytes) before changing bytes in place, and
   * if the ADO process or the memory node dies before the invocation ends, those bytes get their
   * old contents back (an undo log in the pool's memory; on a durable node it is logged before
   * tx_add returns). When do_work returns, every change becomes visible (and, on a durable node,
   * stable before the client's answer) at once. Ranges already added in this call cost nothing.
   * FARMEM_ADO_E_INVALID for bytes outside every value the call holds write-locked,
   * FARMEM_ADO_E_EXHAUSTED when the call's old bytes exceed the undo log
   * (FARMEM_ADO_UNDO_BYTES), FARMEM_ADO_E_UNAVAILABLE when the pool has no undo log (the node had
   * no memory for one). A value with added ranges stays locked until the call ends: its
   * resize_value and unlock_key answer FARMEM_ADO_E_INVALID. */
  int32_t (*tx_add)(farmem_ado_store* s, uint64_t work_id, const void* data, uint64_t bytes);
  /* Puts back the old contents of every range this call added, newest first (the plugin gives
   * up on its changes; the values stay locked and may be changed again). */
  int32_t (*tx_abort)(farmem_ado_store* s, uint64_t work_id);
} farmem_ado_store_ops;

/* Whether a host's ops table has tx_add and tx_abort. */
#define FARMEM_ADO_HAS_TX(ops) \
  ((ops)->struct_bytes >= offsetof(farmem_ado_store_ops, tx_abort) + sizeof(void*))
/* What the old bytes of one invocation's tx_add ranges may take in all (with 32 bytes of
 * bookkeeping per range, each padded to 8). */
#define FARMEM_ADO_UNDO_BYTES (256u * 1024u - 64u)

typedef struct farmem_ado_plugin {
  uint32_t abi_version;  /* FARMEM_ADO_ABI_VERSION */
  uint32_t struct_bytes; /* sizeof(farmem_ado_plugin) */
  const char* name;      /* for messages */
  /* Called once. Returns the plugin's state (passed back as self), or NULL after writing why into
   * error (at most error_capacity bytes, NUL-terminated): the launch then fails. */
  void* (*launch)(const farmem_ado_launch* launch, farmem_ado_store* store,
                  const farmem_ado_store_ops* ops, char* error, uint32_t error_capacity);
  /* One invocation: FARMEM_ADO_OK, FARMEM_ADO_ERASE_TARGET, FARMEM_ADO_NOT_MINE, or any other
   * value (passed to the client as plugin_status). */
  int32_t (*do_work)(void* self, const farmem_ado_work* work);
  /* Optional (may be NULL). key is NULL for pool events. */
  void (*op_event)(void* self, uint32_t event, const void* key, uint32_t key_bytes);
  /* Optional. The last call; frees self. */
  void (*shutdown)(void* self);
} farmem_ado_plugin;

typedef const farmem_ado_plugin* (*farmem_ado_entry_fn)(void);

/* Defines the entry point of a plugin (once per library):
 *   FARMEM_ADO_PLUGIN("counter", &launch, &do_work, NULL, &shutdown)  */
#ifdef __cplusplus
#define FARMEM_ADO_EXTERN_C extern "C"
#else
#define FARMEM_ADO_EXTERN_C
#endif
#define FARMEM_ADO_PLUGIN(NAME, LAUNCH, DO_WORK, OP_EVENT, SHUTDOWN)                  \
  FARMEM_ADO_EXTERN_C __attribute__((visibility("default"))) const farmem_ado_plugin* \
  farmem_ado_plugin_v1(void) {                                                        \
    static const farmem_ado_plugin plugin = {FARMEM_ADO_ABI_VERSION,                  \
                                             sizeof(farmem_ado_plugin),               \
                                             NAME,                                    \
                                             LAUNCH,                                  \
                                             DO_WORK,                                 \
                                             OP_EVENT,                                \
                                             SHUTDOWN};                               \
    return &plugin;                                                                   \
  }

#ifdef __cplusplus
}
#endif
#undef FARMEM_ADO_STATIC_ASSERT

#endif /* FARMEM_KV_ADO_PLUGIN_H_ */
