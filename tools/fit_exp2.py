import numpy as np
# minimax-ish fit of 2^f on [-0.5,0.5] by iterated weighted least squares on relative error
deg=6
x=np.cos(np.linspace(0,np.pi,4001))*0.5
w=np.ones_like(x)
for it in range(60):
    A=np.vstack([x**k for k in range(deg+1)]).T / (2.0**x)[:,None]
    sw=np.sqrt(w)
    c,*_=np.linalg.lstsq(A*sw[:,None], np.ones_like(x)*sw, rcond=None)
    err=np.abs(A@c-1)
    w=w*(err/err.max()+1e-3)
    w/=w.mean()
c[0]=1.0  # keep p(0)=1 exactly so exp2(integer) is exact
print("maxrel", np.abs(np.polyval(c[::-1],x)/2.0**x-1).max())
c32=c.astype(np.float32)
print([float.hex(float(v)) for v in c32])
# emulate float32 Horner without fma
def ev(f):
    f=f.astype(np.float32); p=np.float32(c32[deg])
    p=np.full_like(f,c32[deg])
    for k in range(deg-1,-1,-1):
        p=(p*f).astype(np.float32); p=(p+c32[k]).astype(np.float32)
    return p
t=np.random.uniform(-149,127.9,2000000).astype(np.float32)
t=np.concatenate([t,np.random.uniform(-1,1,1000000).astype(np.float32), np.arange(-149,128).astype(np.float32)])
n=np.rint(t).astype(np.int64); f=(t-n).astype(np.float32)
p=ev(f)
n1=n//2; n2=n-n1
r=(p*np.float32(2.0)**n1.astype(np.float32)).astype(np.float32)*(np.float32(2.0)**n2.astype(np.float32))
r=r.astype(np.float32)
ex=2.0**t.astype(np.float64)
ulp=np.spacing(ex.astype(np.float32)).astype(np.float64)
e=np.abs(r.astype(np.float64)-ex)/ulp
print("max ulp", e.max(), "mean", e.mean())
e2=np.abs(np.exp2(t).astype(np.float64)-ex)/ulp
print("numpy exp2 max ulp", e2.max())
