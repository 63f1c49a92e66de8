/* ops.h: the one op enum of tg, for the tensor graph, the kernel graph and
 * ALU math. An X-macro so names print. Order matters only within groups
 * (see uop_is_alu and friends in uop.h). */
#ifndef TG_OPS_H
#define TG_OPS_H

#define TG_OPS(X) \
  /* graph roots and values */ \
  X(SINK) X(NOOP) X(CONST) X(DEFINE_VAR) X(BIND) \
  /* tensor graph */ \
  X(BUFFER) X(RESHAPE) X(PERMUTE) X(EXPAND) X(PAD) X(SHRINK) X(SHRINK_VAR) X(UNSHRINK_VAR) X(FLIP) \
  X(REDUCE_AXIS) X(CONTIGUOUS) X(COPY) X(ASSIGN) X(DETACH) X(ARANGE) X(UNIQUE) X(AFTER) X(WINDOW) X(TAKE) X(CALL) \
  /* sharded tensors (schedule/multi.h): parts on several devices, sums over them */ \
  X(MULTI) X(ALLREDUCE) \
  /* kernel graph */ \
  X(DEFINE_GLOBAL) X(DEFINE_LOCAL) X(DEFINE_REG) X(RANGE) X(END) X(REDUCE) \
  X(INDEX) X(LOAD) X(STORE) X(SPECIAL) X(VECTORIZE) X(GEP) X(DOT4) X(LUT16) X(WMMA) X(IF) X(ENDIF) X(BARRIER) \
  /* ALU: unary */ \
  X(EXP2) X(LOG2) X(SIN) X(SQRT) X(RECIPROCAL) X(NEG) X(TRUNC) X(CAST) X(BITCAST) \
  /* ALU: binary */ \
  X(ADD) X(SUB) X(MUL) X(FDIV) X(IDIV) X(MOD) X(MAX) X(POW) \
  X(CMPLT) X(CMPNE) X(CMPEQ) X(AND) X(OR) X(XOR) X(SHL) X(SHR) X(THREEFRY) \
  /* ALU: ternary */ \
  X(WHERE) X(MULACC)

typedef enum {
#define TG_OP_ENUM(n) OP_##n,
  TG_OPS(TG_OP_ENUM)
#undef TG_OP_ENUM
  OP_COUNT
} uop_op;

#endif
