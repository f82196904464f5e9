/* internal.h — what the code generator's files share (codegen/ only):
 * the plan, the IR emitter and the JIT.  Only these files see LLVM. */
#ifndef PARTIR_CODEGEN_INTERNAL_H
#define PARTIR_CODEGEN_INTERNAL_H

#include "codegen/codegen.h"
#include "spmd/spmd.h"

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

/* One buffer per value: an argument (its tensor is passed in), a
 * constant or iota (evaluated once, when compiling, by the interpreter's
 * kernel), or a value the code computes.  A value inside a tile or sum
 * has one buffer, which each iteration overwrites; a sum also has an
 * accumulator. */
typedef struct Slot {
  const Term *t; /* NULL for a sum's accumulator */
  const Type *type;
  const char *name; /* the printed name, for messages */
  int arg;          /* argument number, or -1 */
  Tensor *value;    /* constant's value, or NULL */
  int acc;          /* accumulators (double or i64): a sum's, or a
                       contraction's row; or -1 */
  gboolean fused;   /* computed inside its users' loops: no buffer */
  gboolean splat;   /* a constant of one number: 'value' holds it alone,
                       and its users read element 0 */
  const SchedRegion *region; /* where the schedule puts it */
  int64_t offset;            /* its bytes in the run's arena, or -1 (arena.c) */
} Slot;

typedef struct Plan {
  CodegenOptions opt;
  gboolean spmd;     /* a device's program: it runs on a device */
  Schedule *sched;   /* the printer's: regions and their statements */
  GArray *slots;     /* Slot */
  GHashTable *index; /* Term -> slot + 1 */
  int *results;      /* per result: its slot */
  int nresults;
  int64_t arena_bytes; /* the block the computed values share */
} Plan;

/* arena.c: the offsets of the values that share the run's arena (Slot.
 * offset), and its size (Plan.arena_bytes). */
void plan_arena(Plan *p);

/* The slot of 't' in 'p', or -1. */
static inline int plan_slot(const Plan *p, const Term *t) {
  return GPOINTER_TO_INT(g_hash_table_lookup(p->index, t)) - 1;
}

/* fuse.c: marks the values computed inside their users' loops (Slot.
 * fused, as fusion.c decides for 'f'), evaluates the constants and
 * iotas (a splat read by fused kernels only keeps its one number), and
 * prints the decision (partir compile --emit fusion). */
void plan_fuse(Plan *p, const Func *f);
char *plan_fusion_text(const Plan *p);

/* dot.c: the scratch buffer of contraction 't': the products'
 * workspace (fast arithmetic on floats), or a row of accumulators in
 * double or i64 (the interpreter's order). */
const Type *dot_scratch(const Term *t, gboolean exact);

/* The plan of 'f', or NULL with the reason (a program too large for
 * memory). */
Plan *plan_new(const Module *m, const Func *f, const CodegenOptions *o,
               Diag *why);
void plan_free(Plan *p);

/* A collective of the generated code: 't' on this device's operand 'in'
 * (t's operand type), its result written to 'out', through the device's
 * Collectives (kernel_comm, set on the device's thread). */
void codegen_rt_collective(const Term *t, const void *in, void *out);

/* profile.c: what a profiled program's entry calls around each kernel
 * (slot: the value it computes), and the counters it adds to. */
void codegen_rt_clock_start(void);
void codegen_rt_clock_stop(int64_t slot);
typedef struct Profile Profile;
Profile *profile_new(int nslots);
void profile_free(Profile *pr);
/* This thread runs a program with counters 'pr' (NULL: not profiled),
 * until profile_leave. */
void profile_enter(Profile *pr);
void profile_leave(void);
void profile_report(const Profile *pr, const Plan *p, GString *out);

/* The IR of 'p': 'void ENTRY(ptr bufs)' in a new module of 'ctx', bufs[i]
 * the buffer of slot i. */
LLVMModuleRef emit_module(LLVMContextRef ctx, const Plan *p, const char *entry);

/* LLVM's error diagnostics on 'ctx' go to 'why' (a compile with one
 * fails), never to stderr or an abort. */
void jit_catch_diagnostics(LLVMContextRef ctx, Diag *why);

/* The width of the host CPU's vector registers in bits: 512 with
 * AVX-512, 256 with AVX, else 128 (detected once, at run time). */
int jit_host_vector_bits(void);

/* The host's target machine (CPU name and features), or NULL + why. */
LLVMTargetMachineRef jit_host_machine(Diag *why);
/* Runs the O3 pipeline on 'mod' for 'tm'. */
gboolean jit_optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, Diag *why);

/* 'mod' as an object or as assembly text, in memory; NULL + why. */
LLVMMemoryBufferRef jit_emit(LLVMModuleRef mod, LLVMTargetMachineRef tm,
                             LLVMCodeGenFileType kind, Diag *why);

/* A module loaded into the process's JIT, until jit_unload. */
typedef struct JitCode JitCode;
typedef void (*EntryFn)(void **bufs);
/* Emits 'mod' (optimized, for 'tm') as an object in memory and loads it;
 * 'entry' is its function.  NULL with the reason. */
JitCode *jit_load(LLVMModuleRef mod, LLVMTargetMachineRef tm, const char *entry,
                  Diag *why);
EntryFn jit_entry(JitCode *code);
void jit_unload(JitCode *code);

#endif
