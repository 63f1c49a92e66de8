/* lr_schedule.c: learning rate as a function of the step, like torch's
 * StepLR, CosineAnnealingLR and OneCycleLR (closed forms). Feed the result
 * to tg_optim_set_lr before each step. */
#include <math.h>
#include "tg.h"

double tg_lr_step(double base, int64_t step, int64_t step_size, double gamma) {
  if (step_size <= 0 || step < 0) return base;
  return base * pow(gamma, (double)(step / step_size));
}

double tg_lr_cosine(double base, int64_t step, int64_t t_max, double eta_min) {
  if (t_max <= 0) return base;
  return eta_min + (base - eta_min) * (1 + cos(M_PI * (double)step / (double)t_max)) / 2;
}

static double anneal_cos(double start, double end, double pct) {
  return end + (start - end) / 2.0 * (cos(M_PI * pct) + 1);
}

double tg_lr_one_cycle(double max_lr, int64_t step, int64_t total_steps, double pct_start, double div_factor, double final_div_factor) {
  double initial = max_lr / div_factor, min_lr = initial / final_div_factor;
  double end1 = pct_start * (double)total_steps - 1, end2 = (double)total_steps - 1;
  double s = (double)step;
  if (s <= end1) return anneal_cos(initial, max_lr, end1 > 0 ? s / end1 : 1.0);
  return anneal_cos(max_lr, min_lr, end2 > end1 ? (s - end1) / (end2 - end1) : 1.0);
}

double tg_lr_warmup_cosine(double base, int64_t step, int64_t warmup, int64_t total, double eta_min) {
  if (step < warmup) return base * (double)(step + 1) / (double)warmup;
  if (total <= warmup) return base;
  double pct = ((double)step - (double)warmup) / ((double)total - (double)warmup);   /* in double: a negative warmup could overflow */
  if (pct > 1) pct = 1;
  return eta_min + (base - eta_min) * (1 + cos(M_PI * pct)) / 2;
}
