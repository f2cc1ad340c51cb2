/* repl_input: the line input of `anvil run`'s interactive chat: line editing and history
 * with libedit when the build found it (ANVIL_HAVE_LIBEDIT) and stdin is a terminal, else
 * plain fgets (Windows, pipes). History lines are kept in memory for arrow-up and, unless
 * turned off, appended to a file (~/.anvil/history, Ollama's ~/.ollama/history). Also owns
 * Ctrl+C for the session: at the prompt it ends the line as an interrupt; during a reply it
 * sets the flag repl_interrupted() reports, so the reply loop can stop. */
#ifndef ANVIL_REPL_INPUT_H
#define ANVIL_REPL_INPUT_H
#include <stdbool.h>

typedef struct repl_input repl_input;

typedef enum { REPL_LINE, REPL_EOF, REPL_INTERRUPT } repl_read_result;

/* history_path: the history file (NULL: no file). Installs the Ctrl+C handler. */
repl_input *repl_input_new(const char *history_path);
void repl_input_free(repl_input *in);   /* restores the Ctrl+C handler */
/* Reads one line (no newline) into *line (malloc'd) after showing prompt (a terminal only). */
repl_read_result repl_input_read(repl_input *in, const char *prompt, char **line);
/* /set history, /set nohistory: whether lines are written to the history file. */
void repl_input_save_history(repl_input *in, bool on);
/* ~/.anvil/history (its folder made), or NULL where this build keeps no history (plain). */
char *repl_history_path(void);
/* Whether ANVIL_NOHISTORY or OLLAMA_NOHISTORY asks for no history file. */
bool repl_history_disabled_by_env(void);
/* "libedit" or "plain": what this build reads lines with. */
const char *repl_input_kind(void);

/* Ctrl+C during a reply: cleared by repl_interrupt_clear before the reply starts. */
bool repl_interrupted(void);
void repl_interrupt_clear(void);
#endif
