/* The wire between tuners and remote workers: length-prefixed frames over
 * TCP.
 *
 *   frame := u32 length (big-endian, of what follows) | u8 version (1) |
 *            u8 type | payload (UTF-8 JSON object, length-2 bytes)
 *
 * A frame longer than DT_WIRE_MAX_FRAME, a wrong version, an unknown type or
 * a payload that is not a JSON object is a protocol error: the receiver logs
 * the reason and closes that connection (never the process).
 *
 * Conversation (worker W, client C):
 *   W→C HELLO   {"worker": name, "target": key, "target_info": {...},
 *                "nonce": hex32, "version": "dtune x.y.z", "max_batch": n}
 *   C→W AUTH    {"nonce": hex32, "mac": hex(HMAC-SHA256(token, "dtune-auth-c" | W.nonce | C.nonce))}
 *   W→C AUTH_OK {"mac": hex(HMAC-SHA256(token, "dtune-auth-w" | C.nonce | W.nonce))}
 *        (mutual: the client checks the worker knows the token too), or
 *        ERROR and close.  Before AUTH_OK the worker accepts nothing else.
 *   C→W BATCH   {"id": n, "batch": dt_batch JSON}
 *   W→C RESULT  {"id": n, "results": [dt_trial_result JSON, ...]}
 *   either ERROR {"message": text} (then close), PING/PONG {} (liveness).
 */
#ifndef DT_MEASURE_WIRE_H
#define DT_MEASURE_WIRE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define DT_WIRE_VERSION 1
#define DT_WIRE_MAX_FRAME (16u << 20) /* bytes after the length prefix */
#define DT_WIRE_HEADER 6              /* length + version + type */

typedef enum {
    DT_MSG_HELLO = 1,
    DT_MSG_AUTH,
    DT_MSG_AUTH_OK,
    DT_MSG_BATCH,
    DT_MSG_RESULT,
    DT_MSG_ERROR,
    DT_MSG_PING,
    DT_MSG_PONG,
} dt_msg_type;

const char *dt_msg_name(dt_msg_type t);

/* Encodes one frame (malloc'ed into *out, *len bytes). */
int dt_wire_encode(dt_msg_type type, const json_t *payload, uint8_t **out, size_t *len,
                   dt_err *e);

/* Incremental decoder for a byte stream: feed what arrives, take frames. */
typedef struct dt_wire_decoder {
    uint8_t *buf;
    size_t len, cap;
    int failed; /* a protocol error was seen: the connection must close */
} dt_wire_decoder;

void dt_wire_decoder_init(dt_wire_decoder *d);
void dt_wire_decoder_free(dt_wire_decoder *d);
/* Appends bytes; DT_EINVAL (and failed set) as soon as a length prefix is
 * over the limit, without buffering the claimed size. */
int dt_wire_feed(dt_wire_decoder *d, const void *data, size_t n, dt_err *e);
/* The length a frame's 4-byte big-endian header p announces (the bytes of
 * type and payload after it), as the decoder reads it. */
uint32_t dt_wire_frame_len(const uint8_t *p);
/* Takes the next complete frame: 1 and *type, *payload (new reference) if
 * there is one, 0 if more bytes are needed, DT_EINVAL on a protocol error. */
int dt_wire_next(dt_wire_decoder *d, dt_msg_type *type, json_t **payload, dt_err *e);

/* ---- authentication (libsodium HMAC-SHA256) ---- */
#define DT_TOKEN_MIN 16 /* bytes of token at least */
/* Reads a token file: its bytes without a trailing newline (LF, CR LF);
 * refuses files readable by others (mode & 077), tokens under DT_TOKEN_MIN
 * bytes, and tokens with a NUL byte, a line break or another control
 * character (0x00..0x1f, 0x7f) anywhere: DT_EINVAL naming the file and the
 * byte offset.  *token is NUL-terminated; *len is its length. */
int dt_token_read(const char *path, char **token, size_t *len, dt_err *e);
void dt_nonce_new(char out[65]); /* 32 random bytes, hex */
/* hex HMAC-SHA256(token, label | a | b) into out[65]. */
void dt_auth_mac(const char *token, size_t token_len, const char *label, const char *a,
                 const char *b, char out[65]);
/* Constant-time comparison of two hex MACs. */
int dt_auth_equal(const char *mac_a, const char *mac_b);

#endif
