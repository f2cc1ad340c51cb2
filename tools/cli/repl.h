/* repl: the interactive chat of `anvil run MODEL` as Ollama's REPL has it: the
 * conversation (with the image files its messages name, attached as Ollama's CLI does and
 * kept with their message until /clear), multi-line messages between """ lines, and the commands /set (parameter,
 * system, history, wordwrap, format, verbose, think ...), /show, /load, /save, /clear,
 * /bye, /exit and /? (help). An unknown /command is answered, never sent to the model.
 * Where the replies come from (this process or a running server) is the caller's, through
 * repl_backend; the settings the replies use live in repl_session. */
#ifndef ANVIL_REPL_H
#define ANVIL_REPL_H
#include <stdbool.h>
#include "chat.h"
#include "cli_images.h"
#include "store.h"

struct cJSON;

typedef struct {
    char *model;          /* the model as named (a store name or a GGUF path) */
    store_entry entry;    /* its store entry (Modelfile layers) */
    char *system;         /* /set system (or --system); NULL: the model's SYSTEM */
    struct cJSON *params; /* /set parameter values: an Ollama options object (typed values) */
    bool json_format;     /* /set format json */
    bool verbose;         /* /set verbose: timings after each reply */
    int think;            /* CHAT_THINK_* */
    bool remote;          /* the replies come from a running server (/save goes there too) */
    const char *mmproj;   /* --mmproj: the first model's projector (NULL: found as vision_find_projector does;
                             /load forgets it) */
} repl_session;

/* The images one message of the conversation carries (the files it named, read when typed). */
typedef cli_image_list repl_msg_images;

typedef struct {
    /* Streams the reply to the conversation so far (images[i]: hist[i]'s images, in the order
     * they were named); returns it (malloc'd), or NULL when
     * Ctrl+C stopped it (repl_interrupted(): the user's message stays, nothing of the reply,
     * like Ollama) or it failed (the error printed: the user's message is dropped too). */
    char *(*reply)(void *user, const repl_session *s, const chat_message *hist, const repl_msg_images *images, int n_hist);
    /* The session's parameters or format changed; -1 + anv_last_error() when they cannot
     * apply (the REPL prints it and undoes the change). */
    int (*apply)(void *user, const repl_session *s);
    /* /load: switch to s->model / s->entry (already set); -1 + anv_last_error() keeps the
     * old model (the REPL restores s). */
    int (*load)(void *user, const repl_session *s);
    void *user;
} repl_backend;

/* Runs the chat until /bye, /exit or end of input. history_path may be NULL (no file);
 * save_history false: lines are recalled but not written (OLLAMA_NOHISTORY) until /set history. */
void repl_run(repl_session *s, const repl_backend *b, const char *history_path, bool save_history);
#endif
